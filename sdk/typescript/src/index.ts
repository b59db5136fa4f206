// scout-sdk for TypeScript: what a connector imports as `scout-sdk`.
//
// A connector is `src/index.ts` exporting `readTools` and/or `writeTools`
// (objects whose methods are the WIT functions, in camelCase), built by
// `scout-host build` (esbuild, then componentize-js, then the manifest from
// `wit/`). A tool returns its value, or throws a tool error made here;
// `tools({...})` turns any other exception into `bad-response`.
// Each module below imports only the capability it wraps, and the package
// is free of side effects, so a bundle imports only what the connector uses:
// `meter` and `folder` need their `with-*` world.

export * from "./errors";
export * as args from "./args";
export * as graphql from "./graphql";
export * from "./http";
export * as log from "./log";
export * as pages from "./pages";
export { tools } from "./tools";
export * as meter from "./meter";
export { Folder } from "./folder";
