#!/usr/bin/env node
// The `xeo` command's entry: the commands (commands.ts) load from here.
await import('./commands.js');
