/**
 * The controllers' resync sources, loaded for their side effect (each module calls `registerResync`).
 * A controller with a level-triggered resync adds one import line here.
 */
import '../binder/resync.ts';
import '../provisioner/resync.ts';
