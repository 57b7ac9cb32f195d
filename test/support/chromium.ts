import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';

/**
 * Headless Chromium for the browser tests (Debian's `chromium` package; `CHROMIUM_PATH` names another
 * binary). Each call runs one fresh browser with its own profile and no network of its own
 * (background networking, component updates, sync and first-run off), then removes the profile.
 */

/** The Chromium binary, or undefined when none is installed. */
export function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, 'chromium', 'chromium-browser', 'google-chrome'].filter((c): c is string => !!c);
  for (const c of candidates) {
    const found = spawnSync('sh', ['-c', `command -v "${c}"`], { encoding: 'utf8' });
    if (found.status === 0 && found.stdout.trim()) return found.stdout.trim();
  }
  return undefined;
}

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--hide-scrollbars',
];

function runChromium(binary: string, args: string[]): string {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  try {
    return execFileSync(binary, [...FLAGS, `--user-data-dir=${profile}`, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

/** The DOM after the page's scripts ran. */
export function dumpDom(binary: string, url: string): string {
  return runChromium(binary, ['--dump-dom', url]);
}

/** A PNG screenshot of the page at `width` x `height`. */
export function screenshot(binary: string, url: string, file: string, width = 1040, height = 1400): void {
  runChromium(binary, [`--window-size=${width},${height}`, `--screenshot=${file}`, url]);
}

/** An 8-bit RGB(A) PNG decoded to RGBA pixels (enough for Chromium's screenshots). */
export function decodePng(png: Buffer): { width: number; height: number; rgba: Buffer } {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let offset = 8;
  let width = 0;
  let height = 0;
  let colorType = 0;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('ascii', offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error('only 8-bit, non-interlaced PNGs');
      colorType = data[9];
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  const channels = colorType === 6 ? 4 : colorType === 2 ? 3 : 0;
  if (!channels) throw new Error(`PNG color type ${colorType} not supported`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(width * height * 4);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels] : 0;
      const b = prev[i];
      const c = i >= channels ? prev[i - channels] : 0;
      const p = a + b - c;
      const pa = Math.abs(p - a);
      const pb = Math.abs(p - b);
      const pc = Math.abs(p - c);
      const predictor = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][filter];
      line[i] = (line[i] + predictor) & 0xff;
    }
    for (let x = 0; x < width; x++) {
      out[(y * width + x) * 4] = line[x * channels];
      out[(y * width + x) * 4 + 1] = line[x * channels + 1];
      out[(y * width + x) * 4 + 2] = line[x * channels + 2];
      out[(y * width + x) * 4 + 3] = channels === 4 ? line[x * channels + 3] : 255;
    }
    prev = line;
  }
  return { width, height, rgba: out };
}

/** Pixels within `tolerance` (per channel) of the colour `#rrggbb`. */
export function countColour(image: { rgba: Buffer }, hex: string, tolerance = 40): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < image.rgba.length; i += 4) {
    if (Math.abs(image.rgba[i] - r) <= tolerance && Math.abs(image.rgba[i + 1] - g) <= tolerance && Math.abs(image.rgba[i + 2] - b) <= tolerance) n++;
  }
  return n;
}
