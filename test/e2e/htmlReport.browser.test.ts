import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runChaos } from '../../tools/demo/chaos';
import type { ChaosProgress } from '../../tools/demo/chaosReport';
import { htmlReport, TIMELINE_SERIES } from '../../tools/demo/htmlReport';
import { judge } from '../../tools/demo/verdict';
import { countColour, decodePng, dumpDom, findChromium, screenshot } from '../support/chromium';

/**
 * `npm run demo -- --report FILE.html`, rendered by a real browser: a small chaos run (storage
 * outages and the time phase included) writes its page; headless Chromium loads it from disk and
 * must find the chart drawn (every series laid out with a width, the page's own check) and paint
 * the series' colours. Skipped, with a notice, when no Chromium is installed (`apt-get install -y
 * chromium`; `.ci/run` tries that and skips this test if it fails).
 */

const chromium = findChromium();
if (!chromium)
  console.warn('NO BROWSER: no chromium binary on PATH (apt-get install -y chromium, or set CHROMIUM_PATH); the HTML report browser test is skipped');
const maybe = chromium ? describe : describe.skip;

maybe('the HTML report in headless Chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'demo-report-'));
  const file = join(dir, 'report.html');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The report is under test, on the real engine, the demo's only one (issue 36 removed `--durable replay`). The bound
  // covers a wait for the real engine's machine-wide port lock, which a chaos run elsewhere can hold for many minutes.
  beforeAll(async () => {
    const samples: ChaosProgress[] = [];
    const report = judge(await runChaos({ messages: 120, seed: 5, outages: 1, onProgress: (p) => samples.push(p), progressEveryMs: 100 }));
    writeFileSync(file, htmlReport(report, samples));
  }, 2_400_000);

  it('is self-contained: nothing is loaded from elsewhere', () => {
    const html = readFileSync(file, 'utf8');
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
  });

  it('draws the chart and the invariant table', () => {
    const dom = dumpDom(chromium!, pathToFileURL(file).href);
    const drawn = /data-chart="drawn (\d+) series"/.exec(dom);
    expect(drawn).not.toBeNull();
    expect(Number(drawn![1])).toBe(TIMELINE_SERIES.length);
    expect(dom).toMatch(/<th>invariant<\/th>/);
    expect(dom).toMatch(/no payment charged twice<\/td><td>holds/);
    expect(dom).toMatch(/class="outage"/);
    expect(dom).toMatch(/120 messages: 0 lost, 0 double charges, (\d+)\/\1 reward balances right: PASS/);
  }, 90_000);

  it('paints every series (pixels of their colours in a screenshot)', () => {
    const png = join(dir, 'report.png');
    screenshot(chromium!, pathToFileURL(file).href, png);
    const image = decodePng(readFileSync(png));
    expect(image.width).toBeGreaterThan(900);
    // A legend swatch alone is 14 x 10 = 140 pixels; a drawn line adds hundreds more. Dead-lettered may lie on the axis.
    const counts = TIMELINE_SERIES.filter((s) => s.name !== 'dead-lettered').map((s) => [s.name, countColour(image, s.color, 30)] as const);
    expect(counts.filter(([, n]) => n <= 300)).toEqual([]);
  }, 90_000);
});
