// Full validation of a process graph, as POST /validation and every endpoint that accepts a graph
// run it: the structural checks, then per node (child graphs included) that the process exists in
// its namespace, that arguments are known and required ones given, that literal values satisfy the
// parameter schemas (JSON Schema via ajv), and that `from_node` results can feed the parameter.
// Every problem becomes one catalogue error; nothing here evaluates anything.
import AjvModule, { type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError } from '../core/errors.js';
import type { ProcessParameter, ProcessSpec } from '../core/process.js';
import { checkProcessGraph } from './structure.js';
import { isObject, isRemoteNamespace, walkReferences } from '../core/graph.js';

const Ajv = AjvModule as unknown as typeof AjvModule.default;
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

export interface ValidationEnv {
  predefined(id: string): { spec: ProcessSpec; accepts?: Record<string, unknown>; omittable?: string[] } | undefined;
  /** A stored process (namespace `user` or none) or a remote one (a URL namespace), or null. */
  userProcess(id: string, namespace?: string | null): { parameters?: ProcessParameter[] | null; returns?: { schema?: unknown } | null } | null;
  allowNamespace: boolean;
  /** Most nodes (child graphs included) and deepest nesting of child graphs accepted. */
  limits?: { nodes: number; depth: number };
}

const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);
// openEO's schema keywords: descriptive for validation purposes here (their content is checked
// where the graph runs).
for (const keyword of ['subtype', 'parameters', 'returns', 'dimensions', 'experimental', 'optional']) ajv.addKeyword({ keyword });

const compiled = new Map<unknown, ValidateFunction | null>();
function validatorFor(schema: unknown): ValidateFunction | null {
  let v = compiled.get(schema);
  if (v === undefined) {
    try {
      v = ajv.compile(Array.isArray(schema) ? { anyOf: schema } : (schema as object));
    } catch {
      v = null; // a schema ajv cannot compile is not checked rather than failing every graph
    }
    compiled.set(schema, v);
  }
  return v;
}

/** Whether a value holds a reference or child process anywhere (then JSON Schema cannot judge it). */
function holdsReference(v: unknown): boolean {
  let found = false;
  const seen = () => void (found = true);
  walkReferences(v, { node: seen, parameter: seen, child: seen });
  return found;
}

interface TypeInfo {
  types: Set<string> | null;
  subtypes: Set<string>;
}

/** The JSON types and openEO subtypes a schema (or list of schemas) admits; null types = anything. */
function typesOf(schema: unknown): TypeInfo {
  const list = Array.isArray(schema) ? schema : [schema];
  const types = new Set<string>();
  const subtypes = new Set<string>();
  let any = false;
  for (const s of list) {
    if (!isObject(s)) continue;
    if (s.subtype) subtypes.add(String(s.subtype));
    if (s.type === undefined) {
      if (Array.isArray(s.anyOf) || Array.isArray(s.oneOf)) {
        const inner = typesOf(s.anyOf ?? s.oneOf);
        if (inner.types === null) any = true;
        else inner.types.forEach((t) => types.add(t));
        inner.subtypes.forEach((t) => subtypes.add(t));
      } else any = true;
    } else for (const t of [s.type].flat()) types.add(t === 'integer' ? 'number' : String(t));
  }
  return { types: any ? null : types, subtypes };
}

/** Can a value described by `returns` be passed where `param` is expected? */
function compatible(returns: unknown, param: unknown): boolean {
  const r = typesOf(returns);
  const p = typesOf(param);
  if (r.types === null || p.types === null) return true;
  if (![...r.types].some((t) => p.types!.has(t))) return false;
  // A data cube goes only where data cubes are accepted, unless one side is an untyped object.
  const cube = (i: TypeInfo) => [...i.subtypes].some((s) => s === 'datacube' || s === 'raster-cube' || s === 'vector-cube');
  if (cube(r) === cube(p)) return true;
  return cube(r) ? p.subtypes.size === 0 : r.subtypes.size === 0;
}

/**
 * Most problems a validation lists. Those beyond are counted in one more problem: a graph with
 * thousands of faults (a generated one, or a hostile one) would otherwise cost the event loop an
 * error object and a message each, and its answer megabytes (50,000 dangling references in a body
 * of 1 MB took 0.4 s and answered 8 MB).
 */
export const MAX_PROBLEMS = 100;

/** The problems found: the first MAX_PROBLEMS made into errors, the others only counted. */
class Problems {
  private readonly list: ApiError[] = [];
  private more = 0;

  add(make: () => ApiError): void {
    if (this.list.length < MAX_PROBLEMS) this.list.push(make());
    else this.more++;
  }

  /** The errors; past the limit, MAX_PROBLEMS of them and the count of the rest as the last. */
  done(): ApiError[] {
    if (!this.more) return this.list;
    return [...this.list, new ApiError('ProcessGraphInvalid', { reason: `${this.more} more problems are not listed (only the first ${MAX_PROBLEMS} are)` })];
  }
}

/**
 * Validates a graph. `declared` are the parameters of the process the graph belongs to (a stored
 * process, or a request body with `parameters`): when given, every `from_parameter` must name one
 * of them or a parameter of an enclosing child process (ProcessParameterMissing otherwise).
 */
export function validateProcessGraph(graph: unknown, env: ValidationEnv, declared?: string[] | null): ApiError[] {
  const shape = shapeProblems(graph, env);
  if (shape.length) return shape;
  const problems = new Problems();
  checkNodes(graph as Record<string, Record<string, unknown>>, env, problems, declared ? new Set(declared) : null);
  return problems.done();
}

/** What makes a graph unsound whatever its processes: beyond the size limits, or broken in structure. */
export function shapeProblems(graph: unknown, env: ValidationEnv): ApiError[] {
  if (env.limits) {
    const size = graphSize(graph);
    if (size.nodes > env.limits.nodes) {
      return [
        new ApiError(
          'ProcessGraphComplexity',
          {},
          `The process has ${size.nodes} nodes (child processes included), more than the ${env.limits.nodes} accepted here. Split it into stored processes or simplify it.`,
        ),
      ];
    }
    if (size.depth > env.limits.depth) {
      return [new ApiError('ProcessGraphComplexity', {}, `The process nests child processes ${size.depth} levels deep, more than the ${env.limits.depth} accepted here.`)];
    }
  }
  const problems = new Problems();
  for (const p of checkProcessGraph(graph, { allowNamespace: env.allowNamespace })) problems.add(() => new ApiError('ProcessGraphInvalid', { reason: `${p.where}: ${p.reason}` }));
  return problems.done();
}

/** Names of the parameters a child process gets, from the schema of the parameter it is passed to. */
function childParameters(schema: unknown): string[] | null {
  for (const s of Array.isArray(schema) ? schema : [schema]) {
    if (isObject(s) && s.subtype === 'process-graph' && Array.isArray(s.parameters)) return s.parameters.map((p: any) => String(p?.name));
  }
  return null;
}

/** Parameters with the values a process accepts beyond its definition added to their schemas (made once per process, so compiled schemas are reused). */
const widenedOf = new WeakMap<ProcessParameter[], ProcessParameter[]>();
function widened(params: ProcessParameter[], accepts: Record<string, unknown> | undefined, omittable?: string[]): ProcessParameter[] {
  if (!accepts && !omittable) return params;
  let out = widenedOf.get(params);
  if (!out) {
    out = params.map((p) => (accepts && p.name in accepts ? { ...p, schema: [...(Array.isArray(p.schema) ? p.schema : [p.schema]), accepts[p.name]] } : p));
    if (omittable) out = out.map((p) => (omittable.includes(p.name) ? { ...p, optional: true } : p));
    widenedOf.set(params, out);
  }
  return out;
}

function checkNodes(graph: Record<string, Record<string, unknown>>, env: ValidationEnv, problems: Problems, scope: Set<string> | null): void {
  for (const [nodeId, node] of Object.entries(graph)) {
    const id = node.process_id as string;
    const ns = (node.namespace as string | null | undefined) ?? null;
    const args = node.arguments as Record<string, unknown>;
    const udp = ns === 'backend' ? null : env.userProcess(id, ns);
    const def = udp || ns === 'user' || isRemoteNamespace(ns) ? null : env.predefined(id);
    const params: ProcessParameter[] | null = udp ? (udp.parameters ?? null) : def ? widened(def.spec.parameters, def.accepts, def.omittable) : null;
    if (!udp && !def) {
      problems.add(() => new ApiError('ProcessUnsupported', { process: id, namespace: ns ?? 'backend' }));
    } else if (params) checkArguments(nodeId, id, params, args, graph, env, problems);
    for (const [name, value] of Object.entries(args)) {
      // Child processes are graphs of their own, checked the same way, with their parameters in scope.
      const given = params?.find((p) => p.name === name);
      const inner = given ? childParameters(given.schema) : null;
      const childScope = scope && inner ? new Set([...scope, ...inner]) : scope && !inner ? null : scope;
      walkReferences(value, {
        child: (child) => isObject(child) && checkNodes(child as Record<string, Record<string, unknown>>, env, problems, childScope),
        // `from_parameter` names (outside child graphs) that no scope declares.
        parameter: (name) => scope && !scope.has(name) && problems.add(() => new ApiError('ProcessParameterMissing', { parameter: name })),
      });
    }
  }
}

function returnSchemaOf(node: Record<string, unknown> | undefined, env: ValidationEnv): unknown {
  if (!node) return undefined;
  const id = node.process_id as string;
  const ns = (node.namespace as string | null | undefined) ?? null;
  const udp = ns === 'backend' ? null : env.userProcess(id, ns);
  if (udp) return udp.returns?.schema;
  return ns === 'user' || isRemoteNamespace(ns) ? undefined : env.predefined(id)?.spec.returns.schema;
}

function checkArguments(
  nodeId: string,
  processId: string,
  params: ProcessParameter[],
  args: Record<string, unknown>,
  graph: Record<string, Record<string, unknown>>,
  env: ValidationEnv,
  problems: Problems,
): void {
  const byName = new Map(params.map((p) => [p.name, p]));
  for (const name of Object.keys(args)) {
    if (!byName.has(name)) problems.add(() => new ApiError('ProcessParameterUnsupported', { process: processId, parameter: name }));
  }
  for (const p of params) {
    if (!(p.name in args)) {
      if (!p.optional) problems.add(() => new ApiError('ProcessParameterRequired', { process: processId, parameter: p.name }));
      continue;
    }
    const value = args[p.name];
    const invalid = (reason: string) => problems.add(() => new ApiError('ProcessParameterInvalid', { process: processId, parameter: p.name, reason: `${reason} (node '${nodeId}')` }));
    if (isObject(value) && typeof value.from_node === 'string') {
      const returns = returnSchemaOf(graph[value.from_node], env);
      if (returns !== undefined && !compatible(returns, p.schema)) invalid(`the result of node '${value.from_node}' is of a type this parameter does not accept`);
    } else if (isObject(value) && 'from_parameter' in value) {
      // Resolved when the graph runs; validation must not fail on unresolved parameters.
    } else if (isObject(value) && 'process_graph' in value) {
      if (!typesOf(p.schema).subtypes.has('process-graph') && typesOf(p.schema).types !== null) invalid('a child process is not accepted here');
    } else if (!holdsReference(value)) {
      // A model (subtype ml-model) is a value of the engine, never a literal of the graph.
      const t = typesOf(p.schema);
      if (t.subtypes.size === 1 && t.subtypes.has('ml-model')) {
        invalid('a model is the result of fit_class_random_forest, fit_regr_random_forest or load_ml_model (passed with from_node or from_parameter), not a value written in the graph');
        continue;
      }
      const check = validatorFor(p.schema);
      if (check && !check(value)) invalid(ajv.errorsText(check.errors, { dataVar: p.name }));
    }
  }
}

/** Nodes of a graph and its child graphs, and how deep child graphs nest (the root is depth 1). */
export function graphSize(graph: unknown): { nodes: number; depth: number } {
  let nodes = 0;
  let depth = 0;
  // Bodies nest at most MAX_JSON_DEPTH levels (core/json.ts), so this recursion stays shallow.
  const visit = (g: unknown, level: number): void => {
    if (!isObject(g)) return;
    depth = Math.max(depth, level);
    for (const node of Object.values(g)) {
      nodes++;
      if (isObject(node)) walkReferences(node.arguments, { child: (c) => visit(c, level + 1) });
    }
  };
  visit(graph, 1);
  return { nodes, depth };
}
