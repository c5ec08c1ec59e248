#!/usr/bin/env node
// The `xeo` command's entry. It loads one small module first: `serve` and `worker` may start over
// from there with glibc's allocator set for a server (core/allocator.ts), before the hundreds of
// modules of the commands (commands.ts) are read.
import './core/allocator.js';

await import('./commands.js');
