import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * docs/architecture.md says what the system is, and points at the code that does it; docs/decisions/ holds why, one
 * decision a file. These hold both to the code and to their shape: every `file:line` the architecture cites is a file
 * of that many lines, every link resolves, the architecture tells no history (no issue or review round), every
 * decision has its parts and is in the index, and DESIGN.md is only the map of its old sections.
 */
const ROOT = join(__dirname, '..', '..');
const DOCS = join(ROOT, 'docs');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const architecture = read('docs/architecture.md');
const decisionFiles = readdirSync(join(DOCS, 'decisions')).filter((f) => /^\d{4}-.+\.md$/.test(f));

test('architecture.md: every file:line it cites is a file with at least that many lines', () => {
  const cited = [...architecture.matchAll(/`((?:src|packages|test|tools)\/[\w./-]+\.ts):(\d+)(?:-(\d+))?`/g)];
  expect(cited.length).toBeGreaterThan(40);
  for (const [, file, from, to] of cited) {
    const path = join(ROOT, file);
    const lines = existsSync(path) ? readFileSync(path, 'utf8').split('\n').length : 0;
    expect({ file, line: Number(to ?? from), exists: lines >= Number(to ?? from) }).toEqual({ file, line: Number(to ?? from), exists: true });
  }
});

test('architecture.md: the three state machines of a payment are Mermaid diagrams, and the ledger check has its place', () => {
  const diagrams = [...architecture.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
  expect(diagrams.filter((d) => d.startsWith('stateDiagram-v2')).length).toBeGreaterThanOrEqual(4);
  for (const state of ['InProgress --> Completed', 'idle --> inProgress', '[*] --> Running']) expect(diagrams.join('\n')).toContain(state);
  expect(architecture).toMatch(/^### 3\.\d+ Ledger check$/m);
});

test('architecture.md tells what is, not its history: no issue, pass or review round named', () => {
  expect(architecture).not.toMatch(/\bissue \d+|\bround \d+|\bpass(es)? \d+|mutation pass/i);
});

test('docs: every relative link of architecture.md, DESIGN.md and the decisions resolves to a file', () => {
  const docs = ['docs/architecture.md', 'docs/DESIGN.md', 'docs/decisions/README.md', ...decisionFiles.map((f) => `docs/decisions/${f}`)];
  for (const doc of docs) {
    const dir = join(ROOT, doc, '..');
    for (const [, target] of read(doc).matchAll(/\]\(((?!https?:|#|mailto:)[^)#\s]+)(?:#[^)]*)?\)/g)) {
      expect({ doc, target, exists: existsSync(join(dir, target)) }).toEqual({ doc, target, exists: true });
    }
  }
});

test('decisions: each file has its status, date, supersession and its three parts, numbered in date order, all in the index', () => {
  const index = read('docs/decisions/README.md');
  let lastDate = '';
  decisionFiles.forEach((file, i) => {
    const text = read(`docs/decisions/${file}`);
    expect({ file, number: file.slice(0, 4) }).toEqual({ file, number: String(i + 1).padStart(4, '0') });
    for (const part of ['- **Status**:', '- **Date**:', '- **Supersedes**:', '- **Superseded by**:', '## Context', '## Decision', '## Consequences'])
      expect({ file, part, present: text.includes(part) }).toEqual({ file, part, present: true });
    const date = /- \*\*Date\*\*: (\d{4}-\d{2}-\d{2})/.exec(text)![1];
    expect({ file, inOrder: date >= lastDate }).toEqual({ file, inOrder: true });
    lastDate = date;
    expect({ file, indexed: index.includes(`](${file})`) }).toEqual({ file, indexed: true });
  });
  expect(decisionFiles.length).toBeGreaterThanOrEqual(27);
});

test('DESIGN.md is the map of its old sections, no longer a diary', () => {
  const design = read('docs/DESIGN.md');
  expect(design.split('\n').length).toBeLessThan(60);
  for (const section of ['The house plan', 'Past one task hub', 'Payments: hand off', 'Records and leases', 'Look before you charge again'])
    expect({ section, mapped: design.toLowerCase().includes(section.toLowerCase()) }).toEqual({ section, mapped: true });
});
