// Our words for the processes implemented in src/processes/cubes/vector-processes.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  filter_vector: {
    summary: 'Keep the geometries in a spatial relation to others',
    description:
      'Keeps the geometries of `data` that stand in `relation` to the union of the base geometries: each candidate geometry A is tested as "A relation union" with the predicates of the OGC Simple Features (DE-9IM, computed by JSTS as GEOS computes them): intersects, disjoint, equals, touches, crosses, overlaps, contains (A contains the base geometries) or within (A lies within them). Base geometries in another CRS are reprojected first. Empty geometries are removed. The other dimensions and the properties stay.',
    parameters: {
      data: 'A vector data cube with the candidate geometries.',
      geometries: 'The base geometries: a vector data cube (or GeoJSON); their union is used.',
      relation: 'The predicate: intersects (the default), disjoint, equals, touches, crosses, overlaps, contains or within.',
    },
    returns: 'The vector data cube with the geometries that satisfy the predicate.',
  },
  vector_buffer: {
    summary: 'Buffer geometries by a distance',
    description:
      'Replaces each geometry by its buffer: the area within `distance` metres of it (a negative distance shrinks polygons and may empty them). Buffers are polygons drawn as GEOS draws them (JSTS: round joins and ends, 8 segments per quarter circle). The geometries must be in a CRS in metres (UnitMismatch otherwise: reproject them with vector_reproject first). Empty geometries stay empty; properties stay.',
    parameters: {
      geometries: 'A vector data cube.',
      distance: 'The buffer distance in metres; not 0.',
    },
    returns: 'A vector data cube of the buffers.',
    exceptions: { UnitMismatch: 'The geometries are not in a CRS whose unit is the metre.' },
  },
  vector_reproject: {
    summary: 'Reproject geometries',
    description:
      'Transforms every vertex of the geometries to another CRS with proj4 (lines between vertices stay straight in the new CRS; they are not densified). The CRS is an EPSG code, or a WKT that names its EPSG code. The other dimensions and the properties stay.',
    parameters: {
      data: 'A vector data cube.',
      projection: 'The target CRS: an EPSG code (e.g. 32633) or a WKT2 (or WKT1) definition with an EPSG identifier.',
      dimension: 'The geometry dimension to reproject; null for all (a cube has one here).',
    },
    returns: 'The vector data cube in the new CRS.',
    exceptions: { DimensionNotAvailable: 'The cube has no geometry dimension of that name.' },
  },
  vector_to_regular_points: {
    summary: 'Sample points on a regular grid',
    description:
      "Samples points from each geometry: for polygons the centres of the cells of a grid of `distance` metres starting at the upper left corner of the polygon's bounding box, those inside the polygon (or on its boundary); when none is, the polygon's first vertex. For lines a point at the start and then one every `distance` metres along the line. Points stay as they are. The geometries must be in a CRS in metres. Grouped, each geometry becomes a MultiPoint (empty ones stay empty, ids kept); otherwise each point is a feature of its own with the properties and values of its geometry.",
    parameters: {
      data: 'A vector data cube.',
      distance: 'The spacing in metres.',
      group: 'true (the default): one MultiPoint per geometry; false: one Point per sample.',
    },
    returns: 'A vector data cube of points.',
    exceptions: { UnitMismatch: 'The geometries are not in a CRS whose unit is the metre.' },
  },
  vector_to_random_points: {
    summary: 'Sample random points',
    description:
      'Samples points uniformly at random inside each polygon, along each line and among the vertices of (multi-)points (each vertex at most once). Without counts one point per geometry; `geometry_count` caps the points per geometry; `total_count` caps all points (shared out evenly, at least one per geometry, so it must be at least the number of geometries). The same `seed` gives the same points. Empty geometries get none. Grouped, each geometry becomes a MultiPoint (ids kept); otherwise each point is a feature of its own with the properties and values of its geometry.',
    parameters: {
      data: 'A vector data cube.',
      geometry_count: 'The most points per geometry; null for no limit of its own.',
      total_count: 'The most points in all; null for no limit.',
      group: 'true (the default): one MultiPoint per geometry; false: one Point per sample.',
      seed: 'A seed for the random numbers; null for a different draw each time.',
    },
    returns: 'A vector data cube of points.',
    exceptions: { CountMismatch: 'total_count is lower than the number of geometries.' },
  },
};
