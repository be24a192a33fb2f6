// @xtts/core: what plugins (core and third-party) may use. Subsystems export their public API
// from their own index; heavy ones (model, training, backends) are imported by path so that
// commands which do not train never load TensorFlow.js.
export * from './errors.js';
export { XttsCommand, toXttsError, type SuccessEnvelope, type ErrorEnvelope } from './cli/command.js';
export {
  configFlag,
  setFlag,
  cacheFlag,
  datasetFlag,
  thresholdFlag,
  parseThresholds,
  positiveNumberFlag,
} from './cli/flags.js';
export {
  announcePipes,
  didYouMean,
  makeTemporaryFolder,
  onStopSignals,
  plural,
  readToEnd,
  removeTemporaryFolder,
  requireRegularFile,
  SIGNAL_EXIT,
  shellQuote,
  type StopSignal,
  unreadableWhy,
} from './util/index.js';
