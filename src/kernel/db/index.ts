export { openDatabase, type Database, type DatabaseOptions } from './database.ts';
export { migrateSchema, type SchemaMigrations } from './migrate.ts';
export type { NotificationHandlers, Subscription } from './notifications.ts';
