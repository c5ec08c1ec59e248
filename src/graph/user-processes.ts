// The processes a graph calls besides the predefined ones, directly or through each other: the
// user's stored processes (namespace `user`, or none) and processes named by URL (remote-
// processes.ts). What a compute thread needs besides the graph (threads read no records and fetch
// no process definitions themselves), keyed by core/graph.ts's processKey.
import type { ProcessGraphRepo } from '../store/types.js';
import { ApiError } from '../core/errors.js';
import { forEachNode, isRemoteNamespace, processKey, type UserProcess } from '../core/graph.js';
import type { RemoteProcesses } from './remote-processes.js';

/** Most remote processes one graph may call, through each other included. */
export const MAX_REMOTE_PROCESSES = 32;

export async function userProcessesOf(repo: ProcessGraphRepo, remote: RemoteProcesses, userId: string | null, graph: unknown): Promise<Record<string, UserProcess>> {
  const out: Record<string, UserProcess> = {};
  let remotes = 0;
  // Level by level: the processes a graph calls are read together, then the ones they call.
  let next = [graph];
  while (next.length) {
    const ids = new Set<string>();
    const urls = new Map<string, { namespace: string; id: string }>();
    for (const g of next) {
      forEachNode(g, (node) => {
        const ns = node.namespace ?? 'user';
        const key = processKey(node.process_id, node.namespace);
        if (key === null || Object.hasOwn(out, key)) return;
        if (ns === 'user') ids.add(node.process_id);
        else if (isRemoteNamespace(ns)) urls.set(key, { namespace: ns, id: node.process_id });
      });
    }
    remotes += urls.size;
    if (remotes > MAX_REMOTE_PROCESSES) {
      const [first] = urls.values();
      throw new ApiError('ProcessNamespaceInvalid', { namespace: first.namespace, process: first.id, reason: `the process calls more than ${MAX_REMOTE_PROCESSES} processes by URL` });
    }
    const [stored, fetched] = await Promise.all([
      ids.size && userId ? repo.getMany(userId, [...ids]) : [],
      Promise.all([...urls].map(async ([key, { namespace, id }]) => [key, await remote.process(namespace, id)] as const)),
    ]);
    next = [];
    for (const s of stored) {
      if (Object.hasOwn(out, s.id)) continue;
      out[s.id] = s.process as unknown as UserProcess;
      next.push(s.process.process_graph);
    }
    for (const [key, proc] of fetched) {
      if (Object.hasOwn(out, key)) continue;
      out[key] = proc;
      next.push(proc.process_graph);
    }
  }
  return out;
}
