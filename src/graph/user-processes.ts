// The stored processes of a user that a graph calls, directly or through each other: what a
// compute thread needs besides the graph (threads do not read the user's records themselves).
import type { ProcessGraphRepo } from '../store/types.js';
import { forEachNode, type UserProcess } from '../core/graph.js';

export async function userProcessesOf(repo: ProcessGraphRepo, userId: string | null, graph: unknown): Promise<Record<string, UserProcess>> {
  const out: Record<string, UserProcess> = {};
  if (!userId) return out;
  // Level by level: the processes a graph calls are read together, then the ones they call.
  let next = [graph];
  while (next.length) {
    const ids = new Set<string>();
    for (const g of next) {
      forEachNode(g, (node) => {
        const ns = node.namespace ?? 'user';
        if (ns === 'user' && !Object.hasOwn(out, node.process_id)) ids.add(node.process_id);
      });
    }
    const found = ids.size ? await repo.getMany(userId, [...ids]) : [];
    next = [];
    for (const stored of found) {
      if (Object.hasOwn(out, stored.id)) continue;
      out[stored.id] = stored.process as unknown as UserProcess;
      next.push(stored.process.process_graph);
    }
  }
  return out;
}
