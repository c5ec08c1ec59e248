// The forest kernel as a module of its own that imports the kernel memory, for kernel helper
// threads (src/compile/kernel-threads.ts) to run bands of a large prediction; built into
// build/forest.wasm beside build/kernels.wasm.
export { forestBand } from './forest';
