import type { RecordListing } from '../listRecords';
import { listLines } from './printRecords';

/** What `keys list` prints on stdout: the records (text or JSON) and a count. */
export function listRecordsLines(listing: RecordListing, json: boolean): string[] {
  if (json)
    return [
      JSON.stringify(
        {
          records: listing.views,
          pages: listing.pages,
          scanned: listing.scanned,
          matched: listing.matched,
          stoppedBy: listing.stoppedBy ?? null,
          cursor: listing.cursor ?? null,
        },
        null,
        2,
      ),
    ];
  return [
    ...(listing.views.length > 0 ? listLines(listing.views) : []),
    `${listing.views.length} record(s); ${listing.pages} request(s), ${listing.scanned} read${listing.cursor ? '; more may follow (see stderr)' : ''}`,
  ];
}
