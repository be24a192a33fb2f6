#!/usr/bin/env node
// The xtts host: an oclif app whose commands come from the core plugins (plugins/*) and from any
// plugin the user installs or links. It loads nothing but oclif until a command runs.
import { execute } from '@oclif/core';

await execute({ dir: import.meta.url });
