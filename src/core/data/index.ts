// The data pipeline's public API: manifest, preparation (text, features, cache), buckets, loader,
// and the pipeline analysis.
export {
  buildManifest,
  SKIP_REASONS,
  type Manifest,
  type ManifestRow,
  type SkippedRow,
  type SkipReason,
} from './manifest.js';
export { splitLines, utf16Encoding } from './text-lines.js';
export {
  assignLanguages,
  loaderItems,
  prepareDataset,
  refuseUnusable,
  type PreparedDataset,
  type PreparedItem,
  type PrepareOptions,
  type PrepareProgress,
} from './prepare.js';
export { batchSizeWithin, planBuckets, epochBatches, type BucketPlan, type Bucket } from './buckets.js';
export { DataLoader, producerThreads, type LoadedBatch, type LoaderOptions } from './loader.js';
export { rateClips, REFERENCE_JOIN_CLIPS } from './producer.js';
export { type VoiceWarp, voiceWarpFor } from './voice-warp.js';
export { describeDataset, noValidationWarning, skippedRowsWarning, speechLength } from './describe.js';
export { noteSource, sourceNoteWarnings, type SourceNotes } from './source-notes.js';
export { analyzePipeline, DEFAULT_STEP_MS, type PipelineAnalysis, type AnalyzeOptions } from './analyze.js';
export { stepMsFromRun } from './step-time.js';
export { griffinLim } from './audio/griffin-lim.js';
export {
  frameLogF0,
  PITCH_MAX_HZ,
  PITCH_MIN_BANDS,
  PITCH_MIN_HZ,
  pitchBands,
  pitchEstimatorFor,
  referenceLogF0,
} from './audio/pitch.js';
export { referenceLogRate } from './audio/rate.js';
export { MEL_SETTINGS_KEYS, melFilterbank, type MelSettings, melSettingsDiffer, stftWindow } from './audio/mel.js';
export { type ProcessedClip, processAudioFile, readAudioFile } from './audio/index.js';
export { decodeWav, encodeWav } from './audio/wav.js';
export { slotBytes } from './ring.js';
export { speakerName } from './speakers.js';
export { CLEANER_LANGUAGES, cleanerClaims, cleanText, hasSpeech } from './text/cleaners.js';
export { isKnownLanguage } from './text/language.js';
export { languageTag } from './text/normalize/index.js';
export { espeakLanguages, espeakVoice, Phonemizer } from './text/phonemizer.js';
export { Tokenizer, type TokenizerJSON } from './text/tokenizer.js';
