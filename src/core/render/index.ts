export { paint, renderTable, type TableOptions } from './style.js';
export { renderValidationReport, toSarif } from './findings.js';
export { etaText, ProgressLine, rateText } from './progress.js';
export { colour, encodePng } from './png.js';
export { alignmentFigure, curveFigure, melFigure } from './figures.js';
export { sparkline, watchFrameLines, type WatchFrameOptions } from './gpu.js';
