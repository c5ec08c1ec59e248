// Process discovery and validation: the predefined processes (GET /processes) and POST /validation.
import type { AppRequest, AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';
import { json } from './reply.js';
import { processCatalog } from '../process-catalog/catalog.js';
import { MAX_PROBLEMS, shapeProblems, validateProcessGraph, type ValidationEnv } from '../graph/validate.js';
import { messageOf } from '../core/messages.js';
import { parseLimit } from './paging.js';
import { userProcessesOf } from '../graph/user-processes.js';
import { calledProcess, type UserProcess } from '../core/graph.js';
import { DEFAULTS_MEMBER } from '../core/processing-options.js';

/** The release of the openEO processes our definitions follow (API 1.3.0's `version` of GET /processes). */
export const PROCESSES_VERSION = '2.0.0-rc.2';

/** The process graph of a request body: the 1.x form (the process itself, or `process`) or the interface spec's. */
export function processOfBody(body: Record<string, unknown>): Record<string, unknown> {
  const inner = body.process;
  const proc = inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : body;
  if (proc.process_graph === undefined || proc.process_graph === null) throw new ApiError('ProcessGraphMissing');
  return proc;
}

/** Members of a body in the interface spec's form (the process itself) that belong to the process. */
const PROCESS_MEMBERS = ['process_graph', ...Object.values(DEFAULTS_MEMBER)];

/**
 * The process a record keeps from a body in either form, checked, with the stored and remote
 * processes it calls: the 1.x `process`, or for the interface spec's form its `process_graph` (and
 * its `default_*_options`), not the record's other members. `provided`: parameters the runner
 * passes (a service's tile extent, say).
 */
export async function checkedProcessOf(req: AppRequest, body: Record<string, unknown>, provided: string[] = []): Promise<{ process: Record<string, unknown>; userProcesses: Record<string, UserProcess> }> {
  const proc = processOfBody(body);
  const stored = proc === body ? Object.fromEntries(PROCESS_MEMBERS.filter((k) => body[k] !== undefined).map((k) => [k, body[k]])) : proc;
  const userProcesses = await requireValidGraph(req, stored, undefined, provided);
  return { process: stored, userProcesses };
}

export async function storedProcessOf(req: AppRequest, body: Record<string, unknown>, provided: string[] = []): Promise<Record<string, unknown>> {
  return (await checkedProcessOf(req, body, provided)).process;
}

/** What else a process may say about itself (its metadata). */
const PROCESS_METADATA = ['id', 'summary', 'description', 'parameters', 'returns', 'categories', 'deprecated', 'experimental', 'exceptions', 'examples', 'links'];

/**
 * The members a processing request has of its own (`own`) besides processing parameters: with the
 * interface spec's form, the process's members are at the top level too.
 */
export function ownMembers(body: Record<string, unknown>, own: readonly string[]): Set<string> {
  const inner = body.process;
  const isolated = inner && typeof inner === 'object' && !Array.isArray(inner);
  return new Set(isolated ? own : [...own, ...PROCESS_MEMBERS, ...PROCESS_METADATA]);
}

/** What validation knows without records: the predefined processes, the version's rules, the limits. */
function baseEnv(req: AppRequest): ValidationEnv {
  return {
    predefined: (id) => processCatalog.get(id),
    userProcess: () => null,
    allowNamespace: req.version.nodeNamespace,
    limits: { nodes: req.app.config.maxGraphNodes, depth: req.app.config.maxGraphDepth },
  };
}

/**
 * What validation of `graph` needs, with the user's stored processes it calls (read once, before
 * it starts; answered with the environment so a run can use them too). For a graph unsound in
 * shape or size nothing is read: validation reports that first.
 */
export async function validationEnv(req: AppRequest, graph: unknown): Promise<{ env: ValidationEnv; userProcesses: Record<string, UserProcess> }> {
  const env = baseEnv(req);
  if (shapeProblems(graph, env).length) return { env, userProcesses: {} };
  const userProcesses = await userProcessesOf(req.app.store.processGraphs, req.app.remoteProcesses, req.user?.id ?? null, graph);
  env.userProcess = (id, ns) => calledProcess(userProcesses, id, ns);
  return { env, userProcesses };
}

/** The parameter names a process declares, or null when it declares none (then any name may come later). */
export function declaredOf(proc: Record<string, unknown>): string[] | null {
  return Array.isArray(proc.parameters) ? proc.parameters.map((p) => String((p as { name?: unknown })?.name)) : null;
}

/**
 * Checks a graph and throws its first problem (the message lists all of them). `self` is a stored
 * process being written: it may call itself.
 */
export async function requireValidGraph(req: AppRequest, proc: Record<string, unknown>, self?: string, provided: string[] = []): Promise<Record<string, UserProcess>> {
  const { env, userProcesses } = await validationEnv(req, proc.process_graph);
  if (self) {
    const base = env.userProcess;
    env.userProcess = (id, ns) => (id === self && (ns ?? 'user') === 'user' ? proc : base(id, ns));
  }
  // Parameters a runner provides (a service's tile extent, say) are declared for the graph too.
  const declared = provided.length ? [...(declaredOf(proc) ?? []), ...provided] : declaredOf(proc);
  throwFirst(validateProcessGraph(proc.process_graph, env, declared));
  return userProcesses;
}

/** Checks only what makes a graph unsound in structure and size (a stored draft); the rest waits for /validation and the run. */
export function requireSoundGraph(req: AppRequest, proc: Record<string, unknown>): void {
  throwFirst(shapeProblems(proc.process_graph, baseEnv(req)));
}

/** Throws the first of the problems, its message listing all of them. */
function throwFirst(errors: ApiError[]): void {
  if (!errors.length) return;
  if (errors.length === 1) throw errors[0];
  // Past MAX_PROBLEMS, the list ends with the count of those not listed.
  const count = errors.length > MAX_PROBLEMS ? `More than ${MAX_PROBLEMS}` : String(errors.length);
  throw errors[0].withDetail(`${count} problems in the process graph: ${errors.map((e) => `${e.code}: ${messageOf(e, 'en').text}`).join('; ')}`);
}

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/processes',
    summary: 'Predefined processes',
    auth: 'optional',
    handler: (req) => {
      // Always the whole list (pagination is optional): the official JavaScript client, and so
      // the Web Editor, asks with limit=50 and reads only the first page, and its process
      // builder then lacks every process beyond it. A malformed limit is still refused.
      parseLimit(req);
      return json({
        ...(req.version.processesVersion ? { version: PROCESSES_VERSION } : {}),
        processes: processCatalog.specs(),
        links: [{ rel: 'self', href: req.url('/processes'), type: 'application/json' }],
      });
    },
  },
  {
    method: 'POST',
    path: '/validation',
    summary: 'Validate a process graph',
    auth: 'optional',
    body: 'json',
    handler: async (req) => {
      const body = await req.jsonObject();
      // A body without a process graph, a graph unsound in shape, a process by URL that cannot be
      // used: invalid processes like any other, their problems listed.
      let problems: ApiError[];
      try {
        const proc = processOfBody(body);
        const shape = shapeProblems(proc.process_graph, baseEnv(req));
        problems = shape.length ? shape : validateProcessGraph(proc.process_graph, (await validationEnv(req, proc.process_graph)).env, declaredOf(proc));
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 400) throw e;
        problems = [e];
      }
      const errors = problems.map((e) => ({
        code: e.code,
        message: messageOf(e, req.lang).text,
      }));
      return json({ errors });
    },
  },
];
