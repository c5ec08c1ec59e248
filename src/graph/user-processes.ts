// The stored processes of a user that a graph calls, directly or through each other: what a
// compute thread needs besides the graph (threads do not read the user's records themselves).
import type { ProcessGraphRepo } from '../store/types.js';
import type { UserProcess } from '../compute/execute.js';

export function userProcessesOf(repo: ProcessGraphRepo, userId: string | null, graph: unknown): Record<string, UserProcess> {
  const out: Record<string, UserProcess> = {};
  if (!userId) return out;
  const visit = (v: unknown, depth: number): void => {
    if (depth > 200 || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) return v.forEach((x) => visit(x, depth + 1));
    const o = v as Record<string, unknown>;
    if (typeof o.process_id === 'string' && (o.namespace === undefined || o.namespace === null || o.namespace === 'user') && !(o.process_id in out)) {
      const stored = repo.get(userId, o.process_id);
      if (stored) {
        out[o.process_id] = stored.process as unknown as UserProcess;
        visit(stored.process.process_graph, depth + 1);
      }
    }
    for (const x of Object.values(o)) visit(x, depth + 1);
  };
  visit(graph, 0);
  return out;
}
