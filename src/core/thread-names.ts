// The names of Xeo's worker threads, as the system shows them (ps -L, top -H, /proc/PID/task/*/comm,
// perf): Node gives a Worker's `name` to its thread. Linux keeps 15 characters of it. The benches
// count CPU time by these names (bench/lib.ts threadCpu).
export const THREAD_NAMES = {
  /** Tiles and /result (compute/pool.ts). */
  compute: 'xeo-compute',
  /** Batch jobs (jobs/pool.ts), at a lower priority. */
  job: 'xeo-job',
  /** A job's deflate threads: its COG tiles, and the blocks of local files it reads (output/deflate-threads.ts). */
  deflate: 'xeo-deflate',
  /** Helpers of a compiled kernel's bands (compile/kernel-threads.ts). */
  kernel: 'xeo-kernel',
  /** The tier-1 compiler, asc (compile/tier1.ts). */
  compiler: 'xeo-asc',
  /** The compiler of users' AssemblyScript UDFs (udf/as-compiler.ts). */
  udfCompiler: 'xeo-udf-asc',
  /** The host of the Python UDF interpreters (udf/host.ts). */
  udfHost: 'xeo-udf-host',
  /** The SQLite schema migration at start (store/sqlite-migrate.ts). */
  migrate: 'xeo-migrate',
} as const;
