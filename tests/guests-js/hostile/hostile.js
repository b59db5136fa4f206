// A hostile guest: `fetch` reaches the network through wasi:http, past the
// host's `http` handle. Built with http enabled, it imports wasi:http.
export const readTools = {
  async escape(url) {
    const response = await fetch(url);
    return await response.text();
  },
};
