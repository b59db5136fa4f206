// Hello in JavaScript: the read tools of `wit/hello.wit`.
import { connect } from "scout:connector/http@0.2.0";

const decoder = new TextDecoder();

export const readTools = {
  greet(name) {
    // The guest's own check: refused before anything is sent.
    if (/[0-9]/.test(name)) {
      throw { tag: "invalid-input", val: "name: letters only, no digits" };
    }
    const client = connect();
    const response = client.send({
      method: "get",
      path: `/hello/${name}`,
      query: [],
      headers: [],
      body: undefined,
    });
    if (response.status !== 200) {
      throw { tag: "upstream", val: { status: response.status, message: "not 200" } };
    }
    console.log(`greeted ${name}`);
    return decoder.decode(response.body);
  },
  now() {
    return `${Date.now()} ${Math.random()}`;
  },
};
