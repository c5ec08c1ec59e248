import type { RunContext } from './run-context.js';

// Process definitions: the metadata clients see at GET /processes (ids, parameter and return
// schemas exactly as the openEO process definitions give them; texts in our own words; held by the
// process catalogue) and, joined to it on engine threads, the implementation that evaluates the
// process on plain values.

export interface ProcessParameter {
  name: string;
  description: string;
  schema: unknown;
  optional?: boolean;
  default?: unknown;
  deprecated?: boolean;
  experimental?: boolean;
}

export interface ProcessSpec {
  id: string;
  summary: string;
  description: string;
  categories: string[];
  parameters: ProcessParameter[];
  returns: { description: string; schema: unknown };
  exceptions?: Record<string, { message: string; description?: string; http?: number }>;
  experimental?: boolean;
  deprecated?: boolean;
  links?: { rel: string; href: string; type?: string; title?: string }[];
}

/** A child process (callback) bound to its scope: call it with the values of its parameters. */
export type Callback = ((params: Record<string, unknown>) => Promise<unknown>) & { child?: ChildProcess };

/** What the kernels need to compile a child process instead of calling it. */
export interface ChildProcess {
  graph: unknown;
  /** The value of a parameter from the enclosing scopes (undefined when it has none). */
  outer(name: string): unknown;
  /** Whether a user-defined process would be called for this id. */
  shadowed(processId: string): boolean;
  /** The predefined processes of the evaluation. */
  predefined(processId: string): ProcessDef | undefined;
  run?: RunContext;
}

export interface ProcessArgs {
  /** The argument's value (defaults applied); references are already resolved. */
  get<T = unknown>(name: string): T;
  /** Whether the caller passed the argument (as opposed to a default). */
  has(name: string): boolean;
  /** The child process passed for a process-graph parameter, or null. */
  callback(name: string): Callback | null;
  /** A child process found inside an argument value (e.g. the conditions of `properties`). */
  callbackFor(value: unknown): Callback | null;
}

/** Where a process runs: the node's id and process id (for errors and logs), and the run it belongs to. */
export interface ProcessContext {
  nodeId: string;
  processId: string;
  run?: RunContext;
}

export interface ProcessDef {
  spec: ProcessSpec;
  run(args: ProcessArgs, ctx: ProcessContext): unknown | Promise<unknown>;
  /**
   * Synchronous form on plain values (arguments by name, defaults applied), for processes that
   * call no child process: lets the engine run it per pixel without a promise per value.
   */
  scalar?: (args: Record<string, any>) => unknown;
  /**
   * Parameters the definition requires but this back-end fills in when a graph leaves them out (as
   * the clients do with max_variables of the random forests): from the process catalogue
   * (OMITTABLE in accepts.ts); evaluation takes them as optional; GET /processes shows the definition.
   */
  omittable?: string[];
}
