// Types for fft.js 4 (indutny/fft.js): a radix-4 FFT on interleaved complex arrays.
declare module 'fft.js' {
  export default class FFT {
    constructor(size: number);
    readonly size: number;
    createComplexArray(): number[];
    /** Real input of `size` samples -> the first half of the spectrum, interleaved [re, im, ...]. */
    realTransform(out: ArrayLike<number> & { [i: number]: number }, data: ArrayLike<number>): void;
    completeSpectrum(spectrum: ArrayLike<number> & { [i: number]: number }): void;
    transform(out: ArrayLike<number> & { [i: number]: number }, data: ArrayLike<number>): void;
    inverseTransform(out: ArrayLike<number> & { [i: number]: number }, data: ArrayLike<number>): void;
  }
}
