// The failure of a file that is not a readable GeoTIFF, in a module of its own: the main thread
// (the CLI, item searches) tells it apart without loading the reader (cog-reader.ts).

/** A file that is not a readable GeoTIFF; the message names it and why. */
export class RasterFormatError extends Error {}
