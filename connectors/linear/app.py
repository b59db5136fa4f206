"""Linear in Python: the tools of `wit/linear.wit` over Linear's GraphQL API.

Every tool posts one fixed document (a constant below) to `POST /graphql`;
its arguments travel only as GraphQL `variables`, after each is checked, so
nothing an agent writes becomes GraphQL text and a refused argument sends
nothing. The host adds the API key (`Authorization`), pins each route to its
root field (a read sends only its query, a write only its own mutation) and
asks a person before each write. Written from Linear's public API reference
(https://linear.app/developers/graphql, the schema at
https://studio.apollographql.com/public/Linear-API/variant/current/schema/reference).
"""

import datetime
import json
import re

from scout_sdk import Http, args, errors, graphql, header, tools
from wit_world import exports
from wit_world.exports import read_tools, write_tools

ENDPOINT = "/graphql"

ISSUES = (
    "query issues($first: Int!, $after: String, $filter: IssueFilter) {"
    " issues(first: $first, after: $after, filter: $filter, orderBy: updatedAt) {"
    " nodes { id identifier title priorityLabel url updatedAt"
    " state { name } assignee { name } team { key } }"
    " pageInfo { hasNextPage endCursor } } }"
)

ISSUE = (
    "query issue($id: String!) { issue(id: $id) {"
    " id identifier title description priorityLabel url createdAt updatedAt"
    " state { name } assignee { name } team { key } labels { nodes { name } }"
    " comments(first: 20) { nodes { id body createdAt user { name } } } } }"
)

TEAMS = "query teams($first: Int!) { teams(first: $first) { nodes { id key name description } } }"

ISSUE_CREATE = (
    "mutation issueCreate($input: IssueCreateInput!) { issueCreate(input: $input) {"
    " success issue { id identifier title url } } }"
)

COMMENT_CREATE = (
    "mutation commentCreate($input: CommentCreateInput!) { commentCreate(input: $input) {"
    " success comment { id url createdAt } } }"
)

#: Longest description or comment, in bytes.
MAX_MARKDOWN = 65536
#: Longest issue filter, in bytes of its canonical JSON.
MAX_FILTER = 16384
#: Longest page cursor.
MAX_CURSOR = 512
#: The teams `teams` reads (one page).
MAX_TEAMS = 100
#: The labels `create-issue` sets.
MAX_LABELS = 10

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
TEAM_KEY = re.compile(r"[A-Za-z0-9_]{1,10}")
IDENTIFIER = re.compile(r"[A-Za-z0-9_]{1,10}-[1-9][0-9]{0,8}")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# --- Linear's answers ----------------------------------------------------


def error_code(error):
    extensions = error.get("extensions")
    if isinstance(extensions, dict) and isinstance(extensions.get("code"), str):
        return extensions["code"]
    return ""


def answer_errors(body):
    """The `errors` objects of a GraphQL answer (empty when it has none)."""
    try:
        answer = json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError):
        return []
    found = answer.get("errors") if isinstance(answer, dict) else None
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def messages(found):
    """Each error's message, with Linear's `userPresentableMessage` when it says more."""
    texts = []
    for e in found:
        text = str(e.get("message", ""))
        extensions = e.get("extensions")
        shown = extensions.get("userPresentableMessage") if isinstance(extensions, dict) else None
        if isinstance(shown, str) and shown and shown != text:
            text = f"{text}: {shown}"
        texts.append(text)
    return "; ".join(texts)


def budgets(response):
    """Linear's rate-limit headers: what is left of each budget and when it resets."""
    notes = []
    for budget in ("requests", "complexity"):
        remaining = header(response, f"x-ratelimit-{budget}-remaining")
        reset = header(response, f"x-ratelimit-{budget}-reset")
        if remaining is None or reset is None or not reset.strip().isdigit():
            continue
        at = datetime.datetime.fromtimestamp(int(reset) / 1000, tz=datetime.timezone.utc)
        notes.append(f"{budget} remaining {remaining.strip()}, reset at {at.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    return "; ".join(notes)


def not_found(found):
    """Whether every error says the entity asked for does not exist."""
    return bool(found) and all(
        error_code(e) == "ENTITY_NOT_FOUND" or str(e.get("message", "")).startswith("Entity not found")
        for e in found
    )


def query(document, variables):
    """POSTs `document` with `variables` and returns the answer's `data`.

    GraphQL `errors` are a tool error under any status: `not-found` when
    Linear says the entity does not exist, else `upstream` with Linear's
    messages; a non-2xx answer is mapped as the SDK maps it (its
    `Retry-After` carried), and a rate-limited one also says what is left of
    Linear's request and complexity budgets and when they reset."""
    response = Http.connect().send("POST", ENDPOINT, (), graphql.request(document, variables))
    status, body = response.status, bytes(response.body)
    found = answer_errors(body)
    if not_found(found):
        raise errors.not_found(messages(found))
    rate_limited = status == 429 or any(error_code(e) == "RATELIMITED" for e in found)

    def linear_message(_body):
        text = messages(found) if found else None
        note = budgets(response) if rate_limited else ""
        return f"{(text or f'HTTP {status}').rstrip('.')}; Linear's budgets: {note}" if note else text

    failure = errors.status_error(status, body, linear_message, header(response, "retry-after"))
    if failure is not None:
        raise failure
    if found:
        raise errors.upstream(status, linear_message(body))
    return graphql.data(status, body)


def at(value, *path):
    """`value[path...]`, None where any step is missing or null."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def text(value, *path):
    found = at(value, *path)
    if not isinstance(found, str):
        raise errors.bad_response(f"the answer has no text at {'.'.join(path)}")
    return found


def optional_text(value, *path):
    found = at(value, *path)
    return found if isinstance(found, str) and found != "" else None


def nodes(value, *path):
    found = at(value, *path)
    if not isinstance(found, list):
        raise errors.bad_response(f"the answer has no list at {'.'.join(path)}")
    return [n for n in found if isinstance(n, dict)]


# --- arguments -----------------------------------------------------------


def uuid(name, value):
    if value == "":
        raise errors.invalid_input(f"{name} is empty")
    if not UUID.fullmatch(value):
        raise errors.invalid_input(
            f"{name} `{value}` is not a Linear id (a UUID such as 9cfb482a-81e3-4154-b5b9-2c805e70a02d)"
        )
    return value.lower()


def issue_ref(name, value):
    """An issue's identifier (`ENG-123`, sent upper-case) or its id (a UUID)."""
    if value == "":
        raise errors.invalid_input(f"{name} is empty")
    if UUID.fullmatch(value):
        return value.lower()
    if IDENTIFIER.fullmatch(value):
        return value.upper()
    raise errors.invalid_input(
        f"{name} `{value}` is neither an issue identifier (such as ENG-123) nor a Linear id (a UUID)"
    )


def one_line(name, value, max_chars):
    value = value.strip()
    if value == "":
        raise errors.invalid_input(f"{name} is empty")
    if len(value) > max_chars:
        raise errors.invalid_input(f"{name} is longer than {max_chars} characters")
    if CONTROL.search(value):
        raise errors.invalid_input(f"{name} contains a control character (it is one line)")
    return value


def issue_filter(team_key, filter_text):
    """The `IssueFilter` of `issues`: the agent's object and the team's key, by `and`."""
    parts = []
    if filter_text is not None:
        if len(filter_text.encode()) > MAX_FILTER:
            raise errors.invalid_input(f"filter is longer than {MAX_FILTER} bytes")
        value = args.json("filter", filter_text, dict)
        if value:
            parts.append(value)
    if team_key is not None:
        if not TEAM_KEY.fullmatch(team_key):
            raise errors.invalid_input(f"team-key `{team_key}` is not a team key (letters and digits, such as ENG)")
        parts.append({"team": {"key": {"eq": team_key.upper()}}})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"and": parts}


# --- tools ---------------------------------------------------------------


def summary(node):
    return read_tools.IssueSummary(
        id=text(node, "id"),
        identifier=text(node, "identifier"),
        title=text(node, "title"),
        state=text(node, "state", "name"),
        priority=text(node, "priorityLabel"),
        assignee=optional_text(node, "assignee", "name"),
        team_key=text(node, "team", "key"),
        updated_at=text(node, "updatedAt"),
        url=text(node, "url"),
    )


@tools
class ReadTools(exports.ReadTools):
    def issues(self, team_key, filter, first, after):
        variables = {"first": args.bounded("first", first, 25, 1, 50)}
        if after is not None and after.strip() != "":
            if len(after) > MAX_CURSOR or CONTROL.search(after):
                raise errors.invalid_input(
                    f"after is not a cursor `issues` answered (one line, at most {MAX_CURSOR} characters)"
                )
            variables["after"] = after.strip()
        where = issue_filter(team_key, filter)
        if where is not None:
            variables["filter"] = where
        data = query(ISSUES, variables)
        page = at(data, "issues", "pageInfo")
        cursor = optional_text(page, "endCursor") if at(page, "hasNextPage") is True else None
        return read_tools.IssuePage(
            issues=[summary(n) for n in nodes(data, "issues", "nodes")],
            next_cursor=cursor,
        )

    def issue(self, id):
        data = query(ISSUE, {"id": issue_ref("id", id)})
        node = data.get("issue")
        if not isinstance(node, dict):
            raise errors.not_found(f"no issue {id}")
        return read_tools.IssueDetails(
            id=text(node, "id"),
            identifier=text(node, "identifier"),
            title=text(node, "title"),
            description=optional_text(node, "description"),
            state=text(node, "state", "name"),
            priority=text(node, "priorityLabel"),
            assignee=optional_text(node, "assignee", "name"),
            team_key=text(node, "team", "key"),
            labels=[text(label, "name") for label in nodes(node, "labels", "nodes")],
            comments=sorted(
                (
                    read_tools.Comment(
                        id=text(c, "id"),
                        body=text(c, "body"),
                        author=optional_text(c, "user", "name"),
                        created_at=text(c, "createdAt"),
                    )
                    for c in nodes(node, "comments", "nodes")
                ),
                key=lambda c: c.created_at,
            ),
            created_at=text(node, "createdAt"),
            updated_at=text(node, "updatedAt"),
            url=text(node, "url"),
        )

    def teams(self):
        data = query(TEAMS, {"first": MAX_TEAMS})
        return [
            read_tools.Team(
                id=text(t, "id"),
                key=text(t, "key"),
                name=text(t, "name"),
                description=optional_text(t, "description"),
            )
            for t in nodes(data, "teams", "nodes")
        ]


@tools
class WriteTools(exports.WriteTools):
    def create_issue(self, team_id, title, description, priority, assignee_id, label_ids):
        fields = {"teamId": uuid("team-id", team_id), "title": one_line("title", title, 255)}
        if description is not None and description.strip() != "":
            fields["description"] = args.text("description", description, MAX_MARKDOWN)
        if priority is not None:
            fields["priority"] = args.bounded("priority", priority, 0, 0, 4)
        if assignee_id is not None:
            fields["assigneeId"] = uuid("assignee-id", assignee_id)
        if label_ids:
            if len(label_ids) > MAX_LABELS:
                raise errors.invalid_input(f"label-ids holds {len(label_ids)} ids, at most {MAX_LABELS}")
            ids = [uuid("label-ids", label) for label in label_ids]
            if len(set(ids)) != len(ids):
                raise errors.invalid_input("label-ids names a label twice")
            fields["labelIds"] = ids
        data = query(ISSUE_CREATE, {"input": fields})
        if at(data, "issueCreate", "success") is not True:
            raise errors.bad_response("Linear answered issueCreate without success")
        issue = at(data, "issueCreate", "issue")
        return write_tools.CreatedIssue(
            id=text(issue, "id"),
            identifier=text(issue, "identifier"),
            title=text(issue, "title"),
            url=text(issue, "url"),
        )

    def create_comment(self, issue_id, body):
        fields = {"issueId": issue_ref("issue-id", issue_id), "body": args.text("body", body, MAX_MARKDOWN)}
        data = query(COMMENT_CREATE, {"input": fields})
        if at(data, "commentCreate", "success") is not True:
            raise errors.bad_response("Linear answered commentCreate without success")
        comment = at(data, "commentCreate", "comment")
        return write_tools.CreatedComment(
            id=text(comment, "id"),
            url=text(comment, "url"),
            created_at=text(comment, "createdAt"),
        )
