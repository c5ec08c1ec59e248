// Forests read from model files, kept by the SHA-256 of their bytes: the tiles of a map and the
// chunks of a job decode a model once per thread, and two references to the same bytes share it.
// One instance per engine thread (the `models` of its engine, once engine threads have one).
import { LRUCache } from 'lru-cache';
import type { Forest } from './forest.js';
import { decodeForest } from './model-file.js';

export class ModelCache {
  private readonly forests = new LRUCache<string, Forest>({
    maxSize: 512 * 1024 * 1024,
    sizeCalculation: (f) => Math.max(1, f.feature.byteLength * 3 + f.leaves.byteLength + f.roots.byteLength),
  });

  /** The forest of a model file whose SHA-256 is `hash` (decoded and checked on first use). */
  forest(hash: string, bytes: Uint8Array, maxDepth: number): Forest {
    let f = this.forests.get(hash);
    if (!f) {
      f = decodeForest(bytes, maxDepth);
      this.forests.set(hash, f);
    }
    return f;
  }

  /** The forest of these bytes if this thread has it. */
  peek(hash: string): Forest | undefined {
    return this.forests.get(hash);
  }

  get size(): number {
    return this.forests.size;
  }
}

/** This thread's cache (module state is per thread: each worker loads its own). */
export const threadModels = new ModelCache();
