// JPEG encoder for RGBA previews, on the jpeg-js package (baseline JPEG, 4:4:4, pure JS).
//
// JPEG has no alpha. jpeg-js ignores the fourth byte, so transparent pixels (no data) would show
// whatever RGB they hold (black, from colorize/toRgba). We composite over white instead: no data
// then reads as blank paper, distinct from the dark low ends of most colour maps.
import jpeg from 'jpeg-js';

export interface JpegImage {
  width: number;
  height: number;
  /** width*height*4 bytes, RGBA, row-major. */
  data: Uint8Array;
}

function fail(message: string): never {
  throw new Error(`encodeJpeg: ${message}`);
}

/** Baseline JPEG; quality 1..100 (jpeg-js scale, like libjpeg's). */
export function encodeJpeg(img: JpegImage, quality = 85): Buffer {
  const { width, height, data } = img;
  // JPEG's SOF stores width and height as 16-bit values.
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 0xffff || height > 0xffff) {
    fail(`bad size ${width}x${height}`);
  }
  if (data.length !== width * height * 4) fail(`data has ${data.length} bytes, expected ${width * height * 4} (RGBA)`);
  if (!Number.isFinite(quality) || quality < 1 || quality > 100) fail(`quality must be 1..100, got ${quality}`);
  return jpeg.encode({ width, height, data: overWhite(data) }, Math.round(quality)).data;
}

/** The pixels composited over white; the input itself when it is fully opaque. */
function overWhite(data: Uint8Array): Uint8Array {
  const n = data.length;
  let i = 3;
  while (i < n && data[i] === 255) i += 4;
  if (i >= n) return data;
  const out = new Uint8Array(data);
  for (; i < n; i += 4) {
    const a = out[i];
    if (a === 255) continue;
    // c * a/255 + 255 * (1 - a/255) = 255 - (255 - c) * a/255
    const f = a / 255;
    out[i - 3] = 255 - Math.round((255 - out[i - 3]) * f);
    out[i - 2] = 255 - Math.round((255 - out[i - 2]) * f);
    out[i - 1] = 255 - Math.round((255 - out[i - 1]) * f);
    out[i] = 255;
  }
  return out;
}
