// Small helpers every subsystem may use: durable writes, SQLite opening, summaries, string
// suggestions, worker-thread entries, temporary folders, stop signals.
export {
  checkOutputFolder,
  type FileContent,
  filesIn,
  folderUnwritable,
  makeFolders,
  makeOutputFolders,
  type NamedFile,
  otherFileKind,
  readToEnd,
  refuseOutputsOverInputs,
  unreadableWhy,
  writeAllSync,
  writeDurable,
  writeFileAtomic,
  writeOutputFile,
  requireRegularFile,
  requireSafetensorsName,
  announcePipes,
} from './output.js';
export { isCorruptDatabase, openSqlite } from './sqlite.js';
export { summarize, type Summary } from './stats.js';
export { didYouMean, plural, shellQuote } from './strings.js';
export { endWorker, workerEntry } from './worker-entry.js';
export { refuseUnsafeOutputs, RUN_ENTRIES, RUN_MARKER } from './run-files.js';
export { onStopSignals, SIGNAL_EXIT, type StopSignal } from './signals.js';
export { makeTemporaryFolder, removeTemporaryFolder } from './temporary.js';
