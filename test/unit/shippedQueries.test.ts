import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { azdParameters, compiledMainTemplate, describeCompiled, Deployment } from '../support/compiledTemplate';
import { compileKql, formatKqlDiagnostic, tableNames, type QueryScope } from '../support/kusto';

/**
 * Every KQL query the project ships, compiled by Microsoft's Kusto parser and analyzer (Kusto.Language, npm
 * `@kusto/language-service-next`) against the documented Application Insights tables of the scope it runs in
 * (test/support/appInsightsTables.ts names the Microsoft documentation of every column and type):
 *
 * - each file of infra/monitoring/queries (an operator pastes it into the Application Insights Logs blade: component scope);
 * - each query as Azure receives it: the log alert rules' `criteria.allOf[].query` and the workbook tiles' `content.query`,
 *   read from infra/main.bicep compiled by the real Bicep CLI and evaluated for the parameters azd passes (Bicep
 *   interpolations and appended filters included), each in the scope its rule or tile names.
 *
 * Azure validates a scheduled query rule's query when the rule is created, so one analyzer error there fails `azd up`;
 * in a workbook the tile fails when opened. An alert rule's `metricMeasureColumn` and `dimensions` must be columns of
 * the query's result (numeric and string or numeric respectively), else the rule is refused or never fires.
 */

const QUERIES = join(__dirname, '..', '..', 'infra', 'monitoring', 'queries');

/** The azd environment of a default `azd up`. */
const AZD_ENV = { AZURE_ENV_NAME: 'dev', AZURE_LOCATION: 'swedencentral', PAYMENT_PROVIDER_URL: 'https://provider.example.com', VNET_ENABLED: 'false' };

const NUMERIC = ['int', 'long', 'real', 'decimal'];

/** The scope an alert rule's `scopes[0]` or a workbook's resource names: a component or a workspace. */
function scopeOf(resource: unknown): QueryScope {
  const text = String(resource).toLowerCase();
  if (text.includes('microsoft.insights/components')) return 'component';
  if (text.includes('microsoft.operationalinsights/workspaces')) return 'workspace';
  throw new Error(`no known query scope in ${text}`);
}

interface AlertCriterion {
  query: string;
  metricMeasureColumn?: string;
  dimensions?: Array<{ name: string }>;
}

/** What is wrong with one log alert criterion: analyzer diagnostics, a measure that is no numeric result column, a dimension that is no string or numeric one. */
function criterionProblems(rule: string, scope: QueryScope, c: AlertCriterion): string[] {
  const problems: string[] = [];
  const result = compileKql(c.query, scope);
  for (const d of result.diagnostics) problems.push(`${rule} (${scope}): ${formatKqlDiagnostic(d)}`);
  const typeOf = new Map(result.columns.map((col) => [col.name, col.type]));
  if (c.metricMeasureColumn !== undefined && !NUMERIC.includes(typeOf.get(c.metricMeasureColumn) ?? '')) {
    problems.push(`${rule}: metricMeasureColumn ${c.metricMeasureColumn} is ${typeOf.get(c.metricMeasureColumn) ?? 'not a result column'}`);
  }
  for (const dim of c.dimensions ?? []) {
    if (![...NUMERIC, 'string'].includes(typeOf.get(dim.name) ?? ''))
      problems.push(`${rule}: dimension ${dim.name} is ${typeOf.get(dim.name) ?? 'not a result column'}`);
  }
  return problems;
}

function errorsOf(query: string, scope: QueryScope): string[] {
  return compileKql(query, scope).diagnostics.map(formatKqlDiagnostic);
}

describe('the analyzer itself: it reports what Azure refuses', () => {
  test('the two errors the issue found (as shipped before the fix) are reported', () => {
    const streamStalled =
      'customMetrics\n| extend consumer = tostring(customDimensions.consumer), kind = tostring(customDimensions.kind)\n| summarize failures = sum(valueSum) by consumer';
    expect(errorsOf(streamStalled, 'component')).toEqual([expect.stringMatching(/KS228 The name 'kind' needs to be bracketed/)]);
    const replayRate =
      'traces\n| summarize first = count(), replayed = count() by endpoint = tostring(customDimensions.endpoint)\n| extend r = iff(first > 0, 1, 0)';
    expect(errorsOf(replayRate, 'component')).toEqual(expect.arrayContaining([expect.stringMatching(/KS228 The name 'first' needs to be bracketed/)]));
  });

  test('the scopes differ: a classic table is unknown in the workspace, a workspace table in the component', () => {
    expect(tableNames('component')).toEqual(expect.arrayContaining(['requests', 'traces', 'customMetrics', 'exceptions', 'dependencies', 'customEvents']));
    expect(tableNames('workspace')).toEqual(
      expect.arrayContaining(['AppRequests', 'AppTraces', 'AppMetrics', 'AppExceptions', 'AppDependencies', 'AppEvents']),
    );
    expect(errorsOf('traces | take 1', 'workspace')).toEqual([expect.stringMatching(/KS204 The name 'traces' does not refer to any known table/)]);
    expect(errorsOf('AppTraces | take 1', 'component')).toEqual([expect.stringMatching(/KS204/)]);
    expect(errorsOf('AppMetrics | summarize Sum = sum(Sum) by Name, bin(TimeGenerated, 5m)', 'workspace')).toEqual([]);
  });

  test('a column name or type the documented schema does not have is an error', () => {
    expect(errorsOf('customMetrics | summarize sum(Sum)', 'component')).toEqual([expect.stringMatching(/KS142 The name 'Sum'/)]);
    // resultCode is a string in the classic table: sum() of it is a type error.
    expect(errorsOf('requests | summarize sum(resultCode)', 'component')).toEqual([expect.stringMatching(/KS/)]);
    expect(errorsOf('AppRequests | where Success == true | take 1', 'workspace')).toEqual([]);
  });
});

test('an alert whose measure or dimension is not a result column of its query is reported', () => {
  const query = 'customMetrics | extend consumer = tostring(customDimensions.consumer) | summarize failures = sum(valueSum), at = max(timestamp) by consumer';
  expect(criterionProblems('r', 'component', { query, metricMeasureColumn: 'failures', dimensions: [{ name: 'consumer' }] })).toEqual([]);
  expect(criterionProblems('r', 'component', { query, metricMeasureColumn: 'failed', dimensions: [{ name: 'partitionId' }, { name: 'at' }] })).toEqual([
    'r: metricMeasureColumn failed is not a result column',
    'r: dimension partitionId is not a result column',
    'r: dimension at is datetime',
  ]);
  expect(criterionProblems('r', 'component', { query, metricMeasureColumn: 'consumer' })).toEqual(['r: metricMeasureColumn consumer is string']);
});

describe('infra/monitoring/queries: every file compiles against the classic tables (component scope)', () => {
  const files = readdirSync(QUERIES).filter((f) => f.endsWith('.kql'));

  test('the folder holds the queries', () => {
    expect(files.length).toBeGreaterThanOrEqual(24);
  });

  test.each(files)('%s', (file) => {
    expect(errorsOf(readFileSync(join(QUERIES, file), 'utf8'), 'component')).toEqual([]);
  });
});

describe('docs/deploy.md: every kusto block an operator is told to run compiles (Application Insights Logs: component scope)', () => {
  const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'deploy.md'), 'utf8');
  const blocks = [...doc.matchAll(/```kusto\n([\s\S]*?)```/g)].map((m) => m[1]);

  test('the blocks are found', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
  });

  test.each(blocks.map((b, i) => [i + 1, b] as const))('block %i', (_n, block) => {
    expect(errorsOf(block, 'component')).toEqual([]);
  });
});

describeCompiled('the queries Azure receives (compiled infra/main.bicep, evaluated for azd up)', () => {
  const resources = () => new Deployment(compiledMainTemplate()!, azdParameters(AZD_ENV)).allResources();

  const alertRules = () =>
    resources()
      .filter((r) => r.type === 'Microsoft.Insights/scheduledQueryRules')
      .map((r) => {
        const p = r.properties as { scopes: unknown[]; criteria: { allOf: AlertCriterion[] } };
        return { name: String(r.name), scope: scopeOf(p.scopes[0]), criteria: p.criteria.allOf };
      });

  const workbookTiles = () =>
    resources()
      .filter((r) => r.type === 'Microsoft.Insights/workbooks')
      .flatMap((r) => {
        const data = JSON.parse(String(r.properties.serializedData)) as {
          items: Array<{ content: { title?: string; query?: string; resourceType?: string } }>;
        };
        return data.items
          .filter((item) => item.content.query !== undefined)
          .map((item) => ({
            title: item.content.title ?? '?',
            query: item.content.query!,
            scope: scopeOf(item.content.resourceType ?? r.properties.sourceId),
          }));
      });

  test('every log alert rule query compiles in its scope, and its measure and dimensions are result columns', () => {
    const rules = alertRules();
    expect(rules.length).toBeGreaterThanOrEqual(8);
    const problems: string[] = [];
    for (const rule of rules) for (const c of rule.criteria) problems.push(...criterionProblems(rule.name, rule.scope, c));
    expect(problems).toEqual([]);
  });

  test('every workbook tile query compiles in its scope', () => {
    const tiles = workbookTiles();
    expect(tiles.length).toBeGreaterThanOrEqual(16);
    const problems = tiles.flatMap((t) => errorsOf(t.query, t.scope).map((e) => `${t.title} (${t.scope}): ${e}`));
    expect(problems).toEqual([]);
  });

  test('the count: every .kql file, alert rule and tile is compiled (48 before issue 45 plus what it added)', () => {
    const files = readdirSync(QUERIES).filter((f) => f.endsWith('.kql')).length;
    const total = files + alertRules().reduce((n, r) => n + r.criteria.length, 0) + workbookTiles().length;
    console.log(`shipped queries compiled: ${files} files + ${alertRules().length} alert rules + ${workbookTiles().length} workbook tiles = ${total}`);
    expect(total).toBeGreaterThanOrEqual(48);
  });
});
