/**
 * The Application Insights tables as Microsoft documents them, in both scopes a query can run in:
 *
 * - **component** (the Application Insights resource's Logs, a log alert or a workbook scoped to
 *   `microsoft.insights/components`): the classic tables `requests`, `traces`, `customMetrics`, ...
 * - **workspace** (the Log Analytics workspace's Logs, anything scoped to `microsoft.operationalinsights/workspaces`):
 *   the same data as `AppRequests`, `AppTraces`, `AppMetrics`, ... with other column names.
 *
 * Source of every column and type below: "Migrate to workspace-based Application Insights resources", section
 * "Table schemas" (learn.microsoft.com/azure/azure-monitor/app/convert-classic-resource#table-schemas;
 * MicrosoftDocs/azure-monitor-docs `articles/azure-monitor/app/convert-classic-resource.md`, read at commit
 * 438bf70): one row per column, `classic name|classic type|workspace name|workspace type`, transcribed as written
 * except where a comment says otherwise. The columns every workspace table has besides these (TenantId,
 * SourceSystem, _ResourceId, ...) come from "Standard columns in Azure Monitor Logs"
 * (learn.microsoft.com/azure/azure-monitor/logs/log-standard-columns) and the per-table reference pages
 * (learn.microsoft.com/azure/azure-monitor/reference/tables/apptraces and the others).
 */

export type KustoType = 'string' | 'int' | 'long' | 'real' | 'bool' | 'datetime' | 'timespan' | 'dynamic' | 'guid';

export interface TableSchema {
  readonly name: string;
  readonly columns: ReadonlyArray<readonly [name: string, type: KustoType]>;
}

/** Columns every Application Insights table shares (same classic and workspace names/types in the doc). */
const COMMON = `appId|string|ResourceGUID|string
application_Version|string|AppVersion|string
appName|string|-|-
client_Browser|string|ClientBrowser|string
client_City|string|ClientCity|string
client_CountryOrRegion|string|ClientCountryOrRegion|string
client_IP|string|ClientIP|string
client_Model|string|ClientModel|string
client_OS|string|ClientOS|string
client_StateOrProvince|string|ClientStateOrProvince|string
client_Type|string|ClientType|string
cloud_RoleInstance|string|AppRoleInstance|string
cloud_RoleName|string|AppRoleName|string
customDimensions|dynamic|Properties|dynamic
iKey|string|IKey|string
itemId|string|-|-
itemType|string|Type|string
operation_Id|string|OperationId|string
operation_Name|string|OperationName|string
operation_ParentId|string|ParentId|string
operation_SyntheticSource|string|SyntheticSource|string
sdkVersion|string|SDKVersion|string
session_Id|string|SessionId|string
timestamp|datetime|TimeGenerated|datetime
user_AccountId|string|UserAccountId|string
user_AuthenticatedId|string|UserAuthenticatedId|string
user_Id|string|UserId|string`;

const MEASUREMENTS = 'customMeasurements|dynamic|Measurements|dynamic\nitemCount|int|ItemCount|int';

/** Per table: the classic name, the workspace name, and the rows of the doc beyond {@link COMMON}. */
const TABLES: ReadonlyArray<{ classic: string; workspace: string; rows: string }> = [
  {
    classic: 'requests',
    workspace: 'AppRequests',
    rows: `${MEASUREMENTS}
duration|real|DurationMs|real
id|string|Id|string
name|string|Name|string
performanceBucket|string|PerformanceBucket|string
resultCode|string|ResultCode|string
source|string|Source|string
success|string|Success|bool
url|string|Url|string`,
  },
  {
    classic: 'dependencies',
    workspace: 'AppDependencies',
    rows: `${MEASUREMENTS}
data|string|Data|string
duration|real|DurationMs|real
id|string|Id|string
name|string|Name|string
performanceBucket|string|PerformanceBucket|string
resultCode|string|ResultCode|string
success|string|Success|bool
target|string|Target|string
type|string|DependencyType|string`,
  },
  {
    classic: 'traces',
    workspace: 'AppTraces',
    rows: `${MEASUREMENTS}
message|string|Message|string
severityLevel|int|SeverityLevel|int`,
  },
  {
    classic: 'exceptions',
    workspace: 'AppExceptions',
    rows: `${MEASUREMENTS}
assembly|string|Assembly|string
details|dynamic|Details|dynamic
handledAt|string|HandledAt|string
innermostAssembly|string|InnermostAssembly|string
innermostMessage|string|InnermostMessage|string
innermostMethod|string|InnermostMethod|string
innermostType|string|InnermostType|string
message|string|Message|string
method|string|Method|string
outerAssembly|string|OuterAssembly|string
outerMessage|string|OuterMessage|string
outerMethod|string|OuterMethod|string
outerType|string|OuterType|string
problemId|string|ProblemId|string
severityLevel|int|SeverityLevel|int
type|string|ExceptionType|string`,
  },
  {
    classic: 'customEvents',
    workspace: 'AppEvents',
    rows: `${MEASUREMENTS}
name|string|Name|string`,
  },
  {
    // customMetrics has no customMeasurements/itemCount: valueCount is the workspace's ItemCount.
    classic: 'customMetrics',
    workspace: 'AppMetrics',
    rows: `name|string|Name|string
value|real|-|-
valueCount|int|ItemCount|int
valueMax|real|Max|real
valueMin|real|Min|real
valueSum|real|Sum|real
valueStdDev|real|-|-`,
  },
  {
    classic: 'availabilityResults',
    workspace: 'AppAvailabilityResults',
    rows: `${MEASUREMENTS}
duration|real|DurationMs|real
id|string|Id|string
location|string|Location|string
message|string|Message|string
name|string|Name|string
performanceBucket|string|PerformanceBucket|string
size|real|Size|real
success|string|Success|bool`,
  },
  {
    // The doc's row for browserTimings.name gives the workspace type as datetime; the AppBrowserTimings reference page
    // (learn.microsoft.com/azure/azure-monitor/reference/tables/appbrowsertimings) says string, as for every other Name.
    classic: 'browserTimings',
    workspace: 'AppBrowserTimings',
    rows: `${MEASUREMENTS}
name|string|Name|string
networkDuration|real|NetworkDurationMs|real
performanceBucket|string|PerformanceBucket|string
processingDuration|real|ProcessingDurationMs|real
receiveDuration|real|ReceiveDurationMs|real
sendDuration|real|SendDurationMs|real
totalDuration|real|TotalDurationMs|real
url|string|Url|string`,
  },
  {
    classic: 'pageViews',
    workspace: 'AppPageViews',
    rows: `${MEASUREMENTS}
duration|real|DurationMs|real
id|string|Id|string
name|string|Name|string
performanceBucket|string|PerformanceBucket|string
url|string|Url|string`,
  },
  {
    classic: 'performanceCounters',
    workspace: 'AppPerformanceCounters',
    rows: `category|string|Category|string
counter|string|-|-
instance|string|Instance|string
name|string|Name|string
value|real|Value|real`,
  },
];

/** Standard columns of every workspace table (log-standard-columns; `_BilledSize` real, `_IsBillable` string as the table pages list them). */
const WORKSPACE_STANDARD: ReadonlyArray<readonly [string, KustoType]> = [
  ['TenantId', 'string'],
  ['SourceSystem', 'string'],
  ['_ResourceId', 'string'],
  ['_SubscriptionId', 'string'],
  ['_BilledSize', 'real'],
  ['_IsBillable', 'string'],
  ['_ItemId', 'string'],
];

function parseRows(rows: string): Array<{ classic?: readonly [string, KustoType]; workspace?: readonly [string, KustoType] }> {
  return rows
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => {
      const [cn, ct, wn, wt] = line.split('|');
      return {
        classic: cn === '-' ? undefined : ([cn, ct as KustoType] as const),
        workspace: wn === '-' ? undefined : ([wn, wt as KustoType] as const),
      };
    });
}

function build(scope: 'component' | 'workspace'): TableSchema[] {
  return TABLES.map((t) => {
    const rows = parseRows(`${COMMON}\n${t.rows}`);
    const columns = rows.map((r) => (scope === 'component' ? r.classic : r.workspace)).filter((c): c is readonly [string, KustoType] => c !== undefined);
    if (scope === 'workspace') for (const s of WORKSPACE_STANDARD) if (!columns.some(([n]) => n === s[0])) columns.push(s);
    return { name: scope === 'component' ? t.classic : t.workspace, columns };
  });
}

/** The classic tables a query scoped to the Application Insights component sees. */
export const COMPONENT_TABLES: readonly TableSchema[] = build('component');
/** The tables a query scoped to the Log Analytics workspace sees (the Application Insights ones). */
export const WORKSPACE_TABLES: readonly TableSchema[] = build('workspace');
