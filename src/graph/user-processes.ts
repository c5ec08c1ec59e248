// The stored processes of a user that a graph calls, directly or through each other: what a
// compute thread needs besides the graph (threads do not read the user's records themselves).
import type { ProcessGraphRepo } from '../store/types.js';
import { forEachNode, type UserProcess } from '../core/graph.js';

export function userProcessesOf(repo: ProcessGraphRepo, userId: string | null, graph: unknown): Record<string, UserProcess> {
  const out: Record<string, UserProcess> = {};
  if (!userId) return out;
  const visit = (g: unknown): void =>
    forEachNode(g, (node) => {
      const ns = node.namespace ?? 'user';
      if (ns !== 'user' || Object.hasOwn(out, node.process_id)) return;
      const stored = repo.get(userId, node.process_id);
      if (!stored) return;
      out[node.process_id] = stored.process as unknown as UserProcess;
      visit(stored.process.process_graph);
    });
  visit(graph);
  return out;
}
