// tfjs-core registers no gradient functions by itself: they live in ESM files of
// @tensorflow/tfjs-core/dist that Node cannot load (extension-less relative imports), and only the
// higher-level packages bundle them. tfjs-layers' Node bundle does, and registers all 101 of them
// into tfjs-core's global gradient registry when loaded. It is imported for that side effect only;
// the model is written on tfjs-core ops (no layers API is used).
import '@tensorflow/tfjs-layers';
