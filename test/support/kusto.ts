import { join } from 'node:path';
import { COMPONENT_TABLES, WORKSPACE_TABLES, type TableSchema } from './appInsightsTables';

/**
 * Microsoft's Kusto parser and semantic analyzer, Kusto.Language (npm `@kusto/language-service-next`, the Bridge.NET
 * build of the C# library behind Azure Data Explorer and Log Analytics), fed the documented Application Insights tables
 * of one scope. `compileKql` returns every diagnostic the analyzer reports (syntax and semantics: unknown names,
 * wrong types, keywords used as names) and the result's columns with their types.
 */

/** Where a query runs: the Application Insights component (classic tables) or the Log Analytics workspace. */
export type QueryScope = 'component' | 'workspace';

export interface KqlDiagnostic {
  readonly severity: string;
  readonly code: string;
  readonly message: string;
  /** 1-based line and column of the diagnostic in the query text. */
  readonly line: number;
  readonly column: number;
  /** The text the diagnostic points at. */
  readonly text: string;
}

export interface KqlResult {
  readonly diagnostics: readonly KqlDiagnostic[];
  /** The columns of the query's result (name, Kusto type), in order; empty when the result is not a table. */
  readonly columns: ReadonlyArray<{ name: string; type: string }>;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the Bridge.NET build has loose typings; its shape is narrowed here once. */
let kusto: any;
const states = new Map<QueryScope, any>();

function load(): any {
  if (!kusto) {
    const dir = join(require.resolve('@kusto/language-service-next/package.json'), '..');
    // bridge.js defines the global Bridge runtime, then the library registers the global Kusto namespace.
    require(join(dir, 'bridge.js'));
    require(join(dir, 'Kusto.Language.Bridge.js'));
    kusto = (globalThis as any).Kusto;
    if (!kusto?.Language?.KustoCode) throw new Error('@kusto/language-service-next did not register Kusto.Language');
  }
  return kusto;
}

function globalState(scope: QueryScope): any {
  let state = states.get(scope);
  if (!state) {
    const K = load();
    const S = K.Language.Symbols;
    const tables = (scope === 'component' ? COMPONENT_TABLES : WORKSPACE_TABLES).map(
      (t: TableSchema) => new S.TableSymbol.$ctor7(t.name, `(${t.columns.map(([n, type]) => `['${n}']:${type}`).join(', ')})`, null),
    );
    state = K.Language.GlobalState.Default.WithDatabase(new S.DatabaseSymbol.$ctor1(scope, tables));
    states.set(scope, state);
  }
  return state;
}

/** Parses and analyzes `query` against the tables of `scope`. */
export function compileKql(query: string, scope: QueryScope): KqlResult {
  const code = load().Language.KustoCode.ParseAndAnalyze(query, globalState(scope));
  const list = code.GetDiagnostics();
  const diagnostics: KqlDiagnostic[] = [];
  for (let i = 0; i < list.Count; i++) {
    const d = list.getItem(i);
    const before = query.slice(0, d.Start).split('\n');
    diagnostics.push({
      severity: String(d.Severity),
      code: String(d.Code),
      message: String(d.Message),
      line: before.length,
      column: before[before.length - 1].length + 1,
      text: query.slice(d.Start, d.Start + d.Length),
    });
  }
  const columns: Array<{ name: string; type: string }> = [];
  const result = code.ResultType;
  if (result?.Columns)
    for (let i = 0; i < result.Columns.Count; i++) columns.push({ name: result.Columns.getItem(i).Name, type: result.Columns.getItem(i).Type.Name });
  return { diagnostics, columns };
}

/** The table names a scope knows (for a test that shows the scopes differ). */
export function tableNames(scope: QueryScope): string[] {
  return (scope === 'component' ? COMPONENT_TABLES : WORKSPACE_TABLES).map((t) => t.name);
}

/** One diagnostic as one line: `line:column code message ("text")`. */
export function formatKqlDiagnostic(d: KqlDiagnostic): string {
  return `${d.line}:${d.column} ${d.severity} ${d.code} ${d.message} ("${d.text}")`;
}
