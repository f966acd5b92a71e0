/** @module Interface rekon:reconcile/log@0.3.0 **/
export function log(level: Level, message: string): void;
/**
 * # Variants
 * 
 * ## `"debug"`
 * 
 * ## `"info"`
 * 
 * ## `"warn"`
 */
export type Level = 'debug' | 'info' | 'warn';
