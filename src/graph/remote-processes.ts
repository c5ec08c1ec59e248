// Processes named by URL (the Remote Process Definition extension): a node whose `namespace` is an
// absolute https URL (http too where the administrator allows it, XEO_REMOTE_PROCESS_HTTP) calls
// the process that URL holds: one process (its `id` must be the node's `process_id`) or a list of
// processes as GET /process_graphs answers it (the node's process found by id on that page). The
// document is read under the rules for users' URLs (data/outbound.ts: no private addresses unless
// allowed), without any of the user's credentials, up to a size limit, and kept for a while
// (XEO_REMOTE_PROCESS_TTL). Anything wrong is ProcessNamespaceInvalid (400).
import { LRUCache } from 'lru-cache';
import type { RemoteProcessConfig } from '../core/config.js';
import { ApiError } from '../core/errors.js';
import { isObject, type UserProcess } from '../core/graph.js';
import { httpRequest, RemoteError } from '../data/http-client.js';
import { OutboundRefused, type OutboundPolicy } from '../data/outbound.js';
import { checkProcessGraph } from './structure.js';

/** Documents kept at once. */
const KEPT = 500;
const TIMEOUT_MS = 10_000;

interface Kept {
  at: number;
  doc: Promise<unknown>;
}

const invalid = (namespace: string, process: string, reason: string) => new ApiError('ProcessNamespaceInvalid', { namespace, process, reason });

/**
 * The processes named by URL that graphs call, under the administrator's settings and the rules
 * for users' URLs; one per node (main.ts), whose documents every request shares.
 */
export class RemoteProcesses {
  private readonly cache = new LRUCache<string, Kept>({ max: KEPT });

  constructor(
    private readonly settings: RemoteProcessConfig,
    /** The rules for users' URLs (data/outbound.ts usersPolicy). */
    private readonly policy: OutboundPolicy,
  ) {}

  /** The document at `url`, read once per TTL however many ask meanwhile (a failure is not kept). */
  private documentAt(url: string): Promise<unknown> {
    const now = Date.now();
    const kept = this.cache.get(url);
    if (kept && now - kept.at < this.settings.ttlSeconds * 1000) return kept.doc;
    const doc = this.fetchDocument(url);
    this.cache.set(url, { at: now, doc });
    doc.catch(() => this.cache.get(url)?.doc === doc && this.cache.delete(url));
    return doc;
  }

  private async fetchDocument(url: string): Promise<unknown> {
    // No headers of the request that named it: the user's token never leaves for another host.
    const res = await httpRequest(url, { policy: this.policy, maxBytes: this.settings.maxBytes, timeoutMs: TIMEOUT_MS, headers: { accept: 'application/json' } });
    if (!this.settings.http && new URL(res.url).protocol !== 'https:') throw new RemoteError(url, 'it leads to a plain http:// address, which this back-end does not read process definitions from');
    if (res.status !== 200) throw new RemoteError(url, `it answered HTTP ${res.status}`);
    try {
      return JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new RemoteError(url, 'it is not JSON');
    }
  }

  /** The process `id` that the URL `namespace` holds, checked; ProcessNamespaceInvalid otherwise. */
  async process(namespace: string, id: string): Promise<UserProcess> {
    const http = this.settings.http;
    let url: URL;
    try {
      url = new URL(namespace);
    } catch {
      throw invalid(namespace, id, 'it is not a URL');
    }
    if (url.protocol !== 'https:' && !(http && url.protocol === 'http:')) {
      throw invalid(namespace, id, http ? 'only http(s) URLs name processes' : 'only https:// URLs name processes here');
    }
    if (url.username || url.password) throw invalid(namespace, id, 'a URL with credentials is not read');
    let doc: unknown;
    try {
      doc = await this.documentAt(url.href);
    } catch (e) {
      if (e instanceof OutboundRefused) throw invalid(namespace, id, e.message);
      if (e instanceof RemoteError) throw invalid(namespace, id, `it cannot be read (${e.reason})`);
      throw e;
    }
    return processIn(doc, namespace, id);
  }
}

/** The process `id` in a document read from `namespace`: one process, or a list of them. */
function processIn(doc: unknown, namespace: string, id: string): UserProcess {
  if (!isObject(doc)) throw invalid(namespace, id, 'it holds neither a process nor a list of processes');
  let proc: Record<string, unknown>;
  if (Array.isArray(doc.processes)) {
    const found = doc.processes.find((p) => isObject(p) && p.id === id);
    if (!found) throw invalid(namespace, id, `its list of processes has no process '${id}'`);
    proc = found as Record<string, unknown>;
  } else if ('process_graph' in doc) {
    if (doc.id !== id) throw invalid(namespace, id, `it holds process '${String(doc.id)}', not '${id}'`);
    proc = doc;
  } else {
    throw invalid(namespace, id, 'it holds neither a process nor a list of processes');
  }
  const problems = checkProcessGraph(proc.process_graph, { allowNamespace: true });
  if (problems.length) throw invalid(namespace, id, `its process graph is not valid (${problems[0].where}: ${problems[0].reason})`);
  if (proc.parameters !== undefined && proc.parameters !== null && !Array.isArray(proc.parameters)) throw invalid(namespace, id, "its 'parameters' is not a list");
  return proc as unknown as UserProcess;
}
