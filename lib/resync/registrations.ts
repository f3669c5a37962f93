/**
 * The controllers' resync sources, loaded for their side effect (each module calls `registerResync`).
 * A controller that has a level-triggered resync adds one import line here, e.g.
 * `import '../binder/resync.ts';`.
 */
export {};
