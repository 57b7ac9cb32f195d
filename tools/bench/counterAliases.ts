import type { ResourceAlias } from './StorageTrafficCounter';

/** How a counter names resources, as data for the counters' process: `prefix` strips a table prefix, `hub` a task hub's name and partition suffix. */
export type AliasSpec = { readonly prefix: string } | { readonly hub: string };

export function aliasOf(spec: AliasSpec): ResourceAlias {
  if ('prefix' in spec) return (_, name) => (name.startsWith(spec.prefix) ? name.slice(spec.prefix.length) : name);
  const hub = new RegExp(`^${spec.hub.replace(/[^A-Za-z0-9]/g, '')}`, 'i');
  return (_, name) => name.replace(hub, '').replace(/^-/, '').replace(/-\d+$/, '') || name;
}
