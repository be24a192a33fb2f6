export { paint, renderTable, type TableOptions } from './style.js';
export { renderValidationReport, toSarif } from './findings.js';
export { ProgressLine } from './progress.js';
export { alignmentPanelsPng, encodePng, melPanelsPng } from './png.js';
export { sparkline, watchFrameLines, type WatchFrameOptions } from './gpu.js';
