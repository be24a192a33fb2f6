// Flags several commands share, declared once so that they read and behave alike everywhere.
import { Flags } from '@oclif/core';

export const configFlag = Flags.string({ char: 'c', summary: 'Training config (YAML); presets live in configs/.', helpValue: 'FILE' });
export const setFlag = Flags.string({ summary: 'Override a config key, e.g. training.learning_rate=3e-4 (repeatable).', multiple: true, default: [], helpValue: 'KEY=VALUE' });
export const cacheFlag = Flags.string({ summary: 'The cache database (default: the config\'s pipeline.cache.path, or .xtts-cache/cache.sqlite).', helpValue: 'FILE' });
