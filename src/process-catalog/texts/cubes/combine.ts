// Our words for the processes implemented in src/processes/cubes/combine.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  merge_cubes: {
    summary: 'Combine two data cubes into one',
    description:
      'Joins two cubes on the same raster grid (or with the same geometries). Along each shared dimension the labels of both are united: temporal labels in time order, other labels those of `cube1` first and then the new ones of `cube2`. A cube whose dimensions are all found in the other is repeated along the dimensions it lacks. Where both cubes have a value for the same labels, the overlap resolver decides; it runs once for all such values. Cubes on different grids must be aligned with resample_cube_spatial first.',
    parameters: {
      cube1: 'The first data cube; its labels come first.',
      cube2: 'The second data cube.',
      overlap_resolver:
        'The child process for labels both cubes have: it gets the value of `cube1` as `x`, that of `cube2` as `y` (and `context`) and answers the merged value. Needed only when the cubes overlap.',
      context: 'Any data handed to the overlap resolver as its `context` parameter.',
    },
    returns: 'The merged data cube.',
    exceptions: {
      OverlapResolverMissing: 'The cubes have values for the same labels, and no overlap resolver says how to combine them.',
      IncompatibleGeometryTypes: 'The geometries of the two vector cubes are of different kinds (points, lines, polygons).',
    },
  },
  mask: {
    summary: 'Replace the values a raster mask marks',
    description:
      'Puts `replacement` in place of every value of `data` whose counterpart in `mask` is true or a number other than 0; where the mask is false, 0 or no-data the value stays. Both cubes must share the raster grid. The mask may lack dimensions of `data` (it then applies to every label of them); the dimensions it has must be dimensions of `data` holding at least its labels.',
    parameters: {
      data: 'A raster data cube.',
      mask: 'The mask: a raster data cube on the grid of `data`, true (non-zero) where values are to be replaced.',
      replacement: 'The value put in place of masked values; null (the default) means no-data.',
    },
    returns: 'The data cube with the masked values replaced, dimensions and labels unchanged.',
    exceptions: { IncompatibleDataCubes: 'The mask does not fit the data cube: another grid, a dimension or label the data lacks, or a dimension of another type.' },
  },
  mask_polygon: {
    summary: 'Replace the values outside (or inside) polygons',
    description:
      "Puts `replacement` in place of the values of pixels whose centre lies in none of the polygons (inside or on the boundary), or with `inside` in at least one of them. No-data values stay no-data. Polygons in another CRS than the cube's are reprojected vertex by vertex; empty polygons are ignored.",
    parameters: {
      data: 'A raster data cube.',
      mask: 'Polygons or multi-polygons: a vector data cube, or GeoJSON (the deprecated form; EPSG:4326).',
      replacement: 'The value put in place of masked values; null (the default) means no-data.',
      inside: 'false (the default) replaces the pixels outside the polygons, true those inside.',
    },
    returns: 'The data cube with the masked values replaced, dimensions and labels unchanged.',
  },
  apply_kernel: {
    summary: 'Weighted sum over a moving window of pixels',
    description:
      'For every pixel of every x/y plane, multiplies the kernel weights with the pixels under the kernel (centred on the pixel, kernel rows along y and columns along x, not flipped), sums the products and multiplies the sum by `factor`. No-data, NaN and infinite values count as `replace_invalid`; beyond the edges of the plane values come from `border`.',
    parameters: {
      data: 'A raster data cube.',
      kernel: 'The weights: an array of rows (along y), each an array of numbers (along x); both counts must be odd.',
      factor: 'A number every result is multiplied by (1 by default).',
      border:
        'Values beyond the edges: a number (0 by default) for a constant, `replicate` (the edge pixel), `reflect` (mirrored at the edge), `reflect_pixel` (mirrored at the centre of the edge pixel) or `wrap` (from the opposite edge).',
      replace_invalid: 'The value that no-data, NaN and infinite values count as (0 by default).',
    },
    returns: 'The data cube with the filtered values, dimensions and labels unchanged.',
    exceptions: { KernelDimensionsUneven: 'The kernel has an even number of rows or of columns.' },
  },
  apply_neighborhood: {
    summary: 'Run a process on blocks of a cube',
    description:
      'Cuts the cube into blocks of `size` (all labels of a dimension not named), widens each block by `overlap` on both sides and runs the child process on it as a small data cube; the values it answers for the block itself are written back, those for the overlap are dropped. Beyond the edges of the raster the overlap holds no-data; along other dimensions it stops at the first and last label. Sizes and overlaps are counts of labels, or pixels (`px`) and map units (`m`, the default for x and y); durations are not supported. When the blocks are one pixel wide and only one dimension is left whole (a time series per pixel, say), the child process gets that array for all pixels at once.',
    parameters: {
      data: 'A raster data cube.',
      process: 'The child process: it gets a block as `data` (and `context`) and answers a cube (or array) with the same dimensions and labels.',
      size: 'The block size per dimension, as `{dimension, value, unit}`; null as value means all labels.',
      overlap: 'The widening of the blocks per dimension on each side, as `{dimension, value, unit}`; none by default.',
      context: 'Any data handed to the child process as its `context` parameter.',
    },
    returns: 'The data cube with the values answered for the blocks, dimensions and labels unchanged.',
    exceptions: {
      DimensionNotAvailable: 'A size or overlap names a dimension the cube does not have.',
      DataCubePropertiesImmutable: 'The child process answered a cube with other dimensions or labels than the block it got (or no cube at all).',
    },
  },
};
