// Process graph nodes of the random-forest benches and tests: a model loaded with load_ml_model
// and walked per pixel as the reducer of reduce_dimension over bands, as the Python client writes
// DataCube.predict_random_forest(model, dimension="bands").

/** Nodes `l` (the given load), `m` (load_ml_model of `model`: a job id, a file or a URL) and `r` (the map of classes or values). */
export function forestMapNodes(load: object, model: string, last = false): Record<string, object> {
  return {
    l: load,
    m: { process_id: 'load_ml_model', arguments: { id: model } },
    r: {
      process_id: 'reduce_dimension',
      arguments: {
        data: { from_node: 'l' },
        dimension: 'bands',
        reducer: { process_graph: { p: { process_id: 'predict_random_forest', arguments: { data: { from_parameter: 'data' }, model: { from_parameter: 'context' } }, result: true } } },
        context: { from_node: 'm' },
      },
      ...(last ? { result: true } : {}),
    },
  };
}

/** The map of forestMapNodes saved as GTiff. */
export const forestMapGTiff = (load: object, model: string) => ({
  ...forestMapNodes(load, model),
  s: { process_id: 'save_result', arguments: { data: { from_node: 'r' }, format: 'GTiff' }, result: true },
});
