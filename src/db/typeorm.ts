/**
 * TypeORM's classes cpe constructs, loaded with `require`. TypeORM is CommonJS; imported from an ES module, Node
 * would first scan its ~300 modules for their named exports (cjs-module-lexer), ~30-45 ms of every command's
 * start on top of loading them. Types come from `import type` as usual.
 */
import { createRequire } from 'node:module';
import type * as TypeOrm from 'typeorm';

const typeorm = createRequire(import.meta.url)('typeorm') as typeof TypeOrm;

export const DataSource = typeorm.DataSource;
export type DataSource = TypeOrm.DataSource;
export const EntitySchema = typeorm.EntitySchema;
