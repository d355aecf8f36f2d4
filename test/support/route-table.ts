import type { App } from '../../src/kernel/http.ts';

export interface RouteEntry {
  method: string;
  path: string;
}

/**
 * Every route of a running app, from Fastify's own route table, so that a route added later is walked
 * too. printRoutes draws a tree, 4 columns per level,
 * whose segments concatenate to the path.
 */
export function routeTable(app: App): RouteEntry[] {
  const printed = app.printRoutes({ commonPrefix: false });
  const parents: string[] = [];
  const routes: RouteEntry[] = [];
  for (const line of printed.split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const path = (depth > 0 ? parents[depth - 1]! : '') + match[2]!;
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of match[3]?.split(',') ?? []) routes.push({ method: method.trim(), path });
  }
  if (routes.length < 5) throw new Error(`could not read the route table:\n${printed}`);
  return routes;
}

/** A concrete URL for a route pattern: parameters get a plausible value, wildcards a file name. */
export function concretePath(path: string, parameter = '0'): string {
  const concrete = path.replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, parameter).replace(/\*/g, 'x');
  // A catch-all registered at the root prints as a bare `*`.
  return concrete.startsWith('/') ? concrete : `/${concrete}`;
}
