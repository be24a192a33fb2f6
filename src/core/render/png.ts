// PNG images of spectrograms (predicted vs target mel for eval), written with Node's zlib: an RGB
// image, one colour map (a perceptually ordered dark-blue -> yellow ramp), no dependency.
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** RGB pixels [height, width, 3] -> PNG bytes. */
export function encodePng(rgb: Uint8Array, width: number, height: number): Buffer {
  const raw = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; y++) {
    raw[y * (1 + width * 3)] = 0; // filter: none
    raw.set(rgb.subarray(y * width * 3, (y + 1) * width * 3), y * (1 + width * 3) + 1);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', new Uint8Array(0))]);
}

const RAMP: [number, number, number][] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

function colour(x: number): [number, number, number] {
  const t = Math.max(0, Math.min(1, x)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(t));
  const f = t - i;
  return [0, 1, 2].map((k) => Math.round(RAMP[i][k] + f * (RAMP[i + 1][k] - RAMP[i][k]))) as [number, number, number];
}

/**
 * Spectrograms stacked vertically (e.g. predicted above target), low mel bins at the bottom, a
 * 2-pixel gap between panels, every panel on the same colour scale so they compare.
 */
export function melPanelsPng(panels: { mel: Float32Array; frames: number; nMels: number }[], scale = 2): Buffer {
  const width = Math.max(...panels.map((p) => p.frames)) * scale;
  const gap = 2;
  const height = panels.reduce((a, p) => a + p.nMels * scale, 0) + gap * (panels.length - 1);
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of panels) for (let i = 0; i < p.frames * p.nMels; i++) {
    lo = Math.min(lo, p.mel[i]);
    hi = Math.max(hi, p.mel[i]);
  }
  const range = hi > lo ? hi - lo : 1;
  const rgb = new Uint8Array(width * height * 3).fill(255);
  let top = 0;
  for (const p of panels) {
    for (let f = 0; f < p.frames; f++) {
      for (let m = 0; m < p.nMels; m++) {
        const c = colour((p.mel[f * p.nMels + m] - lo) / range);
        for (let dy = 0; dy < scale; dy++) {
          const y = top + (p.nMels - 1 - m) * scale + dy;
          for (let dx = 0; dx < scale; dx++) rgb.set(c, (y * width + f * scale + dx) * 3);
        }
      }
    }
    top += p.nMels * scale + gap;
  }
  return encodePng(rgb, width, height);
}

/**
 * Alignments [steps, tokens] row-major (weights in 0..1) stacked vertically with a 2-pixel gap:
 * decoder steps left to right, text tokens bottom to top, on an absolute 0..1 scale. A reading of
 * the whole text draws one staircase from the bottom left to the top right.
 */
export function alignmentPanelsPng(panels: { alignment: Float32Array; steps: number; tokens: number }[], scale = 3): Buffer {
  const gap = 2;
  const width = Math.max(1, ...panels.map((p) => p.steps)) * scale;
  const height = panels.reduce((a, p) => a + Math.max(1, p.tokens) * scale, 0) + gap * (panels.length - 1);
  const rgb = new Uint8Array(width * height * 3).fill(255);
  let top = 0;
  for (const p of panels) {
    for (let s = 0; s < p.steps; s++) {
      for (let n = 0; n < p.tokens; n++) {
        const c = colour(p.alignment[s * p.tokens + n]);
        for (let dy = 0; dy < scale; dy++) {
          const y = top + (p.tokens - 1 - n) * scale + dy;
          for (let dx = 0; dx < scale; dx++) rgb.set(c, (y * width + s * scale + dx) * 3);
        }
      }
    }
    top += Math.max(1, p.tokens) * scale + gap;
  }
  return encodePng(rgb, width, height);
}
