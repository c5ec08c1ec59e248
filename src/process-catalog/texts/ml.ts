// Our words for the machine-learning processes implemented in src/processes/ml/.
import type { ProcessTexts } from '../spec.js';

export const texts: Record<string, ProcessTexts> = {
  fit_class_random_forest: {
    summary: 'Train a random forest that predicts classes',
    description:
      "Trains a random forest classifier (Breiman 2001) on the features of a vector data cube: each tree on a bootstrap sample of the features, each split the best Gini split over `max_variables` predictors drawn at that node, trees grown until their leaves are pure. The label of each feature is the property `target` of the target's feature at the same position; labels must be numbers. Features without a label or with a no-data predictor are left out and counted in the log, which also gives the out-of-bag accuracy.",
    parameters: {
      predictors: 'The predictor values per feature: a vector data cube, as aggregate_spatial gives it (one value per feature and band, or per band and date).',
      target: "The same features with their class in the property `target`: a GeoJSON FeatureCollection or a vector data cube. Count and geometries must match the predictors', feature by feature.",
      max_variables: 'Predictors tried at each split: a number, `all`, `log2`, `onethird` or `sqrt` of their count. When not given, `sqrt`.',
      num_trees: 'How many trees the forest has.',
      seed: 'Seed of the random choices (bootstrap samples and predictors per split): the same seed gives the same model. Without one, a seed is drawn and logged.',
    },
    returns: 'The trained model, to be passed to predict_random_forest (through the context of reduce_dimension) or saved with save_ml_model.',
  },
  fit_regr_random_forest: {
    summary: 'Train a random forest that predicts values',
    description:
      "Trains a random forest regressor (Breiman 2001) on the features of a vector data cube: each tree on a bootstrap sample of the features, each split the one that lowers the variance most over `max_variables` predictors drawn at that node, trees grown until their leaves hold one value. The value of each feature is the property `target` of the target's feature at the same position and must be a number. Features without a value or with a no-data predictor are left out and counted in the log, which also gives the out-of-bag R².",
    parameters: {
      predictors: 'The predictor values per feature: a vector data cube, as aggregate_spatial gives it.',
      target: "The same features with their value in the property `target`: a GeoJSON FeatureCollection or a vector data cube. Count and geometries must match the predictors', feature by feature.",
      max_variables: 'Predictors tried at each split: a number, `all`, `log2`, `onethird` or `sqrt` of their count. When not given, `onethird`.',
      num_trees: 'How many trees the forest has.',
      seed: 'Seed of the random choices: the same seed gives the same model. Without one, a seed is drawn and logged.',
    },
    returns: 'The trained model, to be passed to predict_random_forest or saved with save_ml_model.',
  },
  predict_random_forest: {
    summary: 'The class or value a random forest predicts',
    description:
      "Runs the values of an array (a pixel's bands, in the order the model was trained on) through every tree of the model: a classifier answers the class of highest mean probability, a regressor the mean of its trees. No-data in any value gives no-data. As the reducer of reduce_dimension over `bands` with the model in `context`, it runs in WebAssembly on every pixel.",
    parameters: {
      data: "The predictor values, in the order of the model's predictors.",
      model: 'A random-forest model (from fit_class_random_forest, fit_regr_random_forest or load_ml_model).',
    },
    returns: 'The predicted class or value, or null when a value is no-data.',
  },
  predict_probabilities: {
    summary: 'The class probabilities a random forest predicts',
    description:
      "Runs the values of an array through every tree of a classification model and answers, per class, the mean of the trees' probabilities, in the order of the model's classes (labelled by their class values). No-data in any value gives no-data for every class. In reduce_dimension or apply_dimension over `bands` with the model in `context`, it runs in WebAssembly and the bands become one band per class.",
    parameters: {
      data: "The predictor values, in the order of the model's predictors.",
      model: 'A random-forest classification model.',
    },
    returns: 'One probability per class.',
  },
  save_ml_model: {
    summary: 'Save a model with the results of a batch job',
    description:
      "Adds the model to the results of the batch job: a file in our random-forest format (flat arrays of the trees, see the documentation on machine learning) and a STAC Item implementing the `ml-model` extension (with the STAC MLM fields name, architecture, tasks, input bands and output classes). load_ml_model reads it back by the job's id or the Item's URL. Outside batch jobs nothing can be saved.",
    parameters: {
      data: 'The model to save.',
      options: 'No options are known; leave it empty.',
    },
    returns: '`true` once the model is saved with the job.',
  },
  load_ml_model: {
    summary: 'Load a saved model',
    description:
      "Loads a random-forest model: by the id of one of your finished batch jobs that saved exactly one model (save_ml_model), by the http(s) URL of a STAC Item implementing the `ml-model` extension (read under the server's outbound rules), or by the path of such an Item or of a model file in your files. Models are cached on each engine thread by the hash of their bytes.",
    parameters: { id: 'A batch job id, the URL of a STAC Item with the `ml-model` extension, or a path in your files.' },
    returns: 'The model, for predict_random_forest and predict_probabilities.',
  },
  predict_onnx: {
    summary: 'Apply an ONNX model to a raster cube',
    description:
      'Runs a machine-learning model in the ONNX format on every pixel of a raster data cube, on the CPU. The model comes from an http(s) URL (addresses of this network are refused unless the operator allows them), a path in your files, or a STAC Item (by URL or path) implementing the `ml-model` extension or STAC MLM, whose model asset is read. Two kinds of model are run: per pixel, taking `[N, bands]` float32 values and answering `[N, k]` (or `[N]`), fed every pixel whose bands all hold values; and per patch, taking `[1, bands, H, W]` and answering `[1, k, H, W]`, fed patches of the cube (per date) that overlap by an eighth of their side, of which the middle is kept, with 0 past the raster edge and for missing values. The number of bands must be what the model takes. One value per pixel replaces the `bands` dimension; several become the labels of `bands`, named by the model (its metadata `output_labels`, or the classes of the STAC Item) or `class_0`, `class_1`, .... Pixels where any band has no value get no value.',
    parameters: {
      data: "A raster data cube; its bands (in the order of their labels) are the model's input features.",
      model: 'The model: an http(s) URL or a path in your files, of an ONNX file or of a STAC Item describing one.',
    },
    returns: "A raster data cube of the model's answers: without the `bands` dimension for one value per pixel, else with one band per value.",
  },
};
