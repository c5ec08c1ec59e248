// Room for a block inflated by node:zlib in one output buffer. node:zlib takes an output buffer
// filled to its last byte for a sign of more output: with room of exactly the block's size it
// allocates a second buffer of that size and goes back to its thread once more to find the stream
// ended. A few bytes more spare both; readers view a block by its geometry, not its buffer's size.

/** Bytes a decoded block's buffer may hold beyond the block (a multiple of 8: any typed view fits). */
export const BLOCK_SLACK = 8;

/** zlib's `chunkSize` for inflating a block of `size` bytes into one buffer. */
export const inflateRoom = (size: number): number => Math.max(64, size + BLOCK_SLACK);
