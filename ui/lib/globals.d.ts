// What the window's page finds on `window` besides the DOM.
interface Window {
  /** Tauri's API, present when the page runs in the app (absent in a browser under `nightshiftctl serve`). */
  __TAURI__?: {
    core: { invoke(command: string, args?: object): Promise<any> };
    event: { listen(event: string, handler: (e: { payload: any }) => void): Promise<() => void> };
  };
  /** The page's own hooks for the tests (see app.js). */
  nightshiftUi?: object;
}
