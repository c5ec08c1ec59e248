// glibc's malloc, set for a server with several threads. By default glibc gives each thread that
// allocates its own arena and raises its mmap threshold after every large free, so the block and
// tile buffers that compute, job and libuv threads free stay in their arenas: after a zonal job,
// 180-230 MB of the server's RSS was freed memory held there. `serve` and `worker` therefore start
// over once, as the same process (execve, before any other module loads), with two arenas and a
// fixed 128 KiB mmap threshold, so freed large buffers go back to the system. An operator who sets
// either variable, or a glibc.malloc tunable, keeps their own values; other allocators ignore both.
// Figures and the trade-off: docs/operations.md (memory).

/** The variables set, as glibc reads them at start. */
export const ALLOCATOR_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' } as const;

const LONG_RUNNING = new Set(['serve', 'worker']);

/** Whether this process should start over with ALLOCATOR_ENV. */
export function wantsAllocatorRestart(argv: readonly string[], env: NodeJS.ProcessEnv, platform: NodeJS.Platform): boolean {
  if (platform !== 'linux' || !LONG_RUNNING.has(argv[2])) return false;
  if (Object.keys(ALLOCATOR_ENV).some((k) => env[k] !== undefined)) return false;
  return !env.GLIBC_TUNABLES?.includes('glibc.malloc.');
}

if (typeof process.execve === 'function' && wantsAllocatorRestart(process.argv, process.env, process.platform)) {
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, ...ALLOCATOR_ENV });
}
