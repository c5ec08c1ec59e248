// Our words for the machine-learning processes implemented in src/processes/ml/.
import type { ProcessTexts } from '../spec.js';

export const texts: Record<string, ProcessTexts> = {
  predict_onnx: {
    summary: 'Apply an ONNX model to a raster cube',
    description:
      'Runs a machine-learning model in the ONNX format on every pixel of a raster data cube, on the CPU. The model comes from an http(s) URL (addresses of this network are refused unless the operator allows them), a path in your files, or a STAC Item (by URL or path) implementing the `ml-model` extension or STAC MLM, whose model asset is read. Two kinds of model are run: per pixel, taking `[N, bands]` float32 values and answering `[N, k]` (or `[N]`), fed every pixel whose bands all hold values; and per patch, taking `[1, bands, H, W]` and answering `[1, k, H, W]`, fed patches of the cube (per date) that overlap by an eighth of their side, of which the middle is kept, with 0 past the raster edge and for missing values. The number of bands must be what the model takes. One value per pixel replaces the `bands` dimension; several become the labels of `bands`, named by the model (its metadata `output_labels`, or the classes of the STAC Item) or `class_0`, `class_1`, .... Pixels where any band has no value get no value.',
    parameters: {
      data: 'A raster data cube; its bands (in the order of their labels) are the model\'s input features.',
      model: 'The model: an http(s) URL or a path in your files, of an ONNX file or of a STAC Item describing one.',
    },
    returns: 'A raster data cube of the model\'s answers: without the `bands` dimension for one value per pixel, else with one band per value.',
  },
};
