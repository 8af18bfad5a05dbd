"""Tool catalogues of realistic shape, and the labelled queries that measure finding in them.

A catalogue is the first N of 1,008 tools (28 services x 3 kinds of object x 12 actions) in a
fixed order: varied names (``github_open_pull_request``, ``stripe_issue_refund``), a paragraph of
description each (2-4 sentences, picked from several phrasings by a seeded random generator),
and 2-6 typed parameters with descriptions, enums (``Literal``) and defaults. The tools whose
names the labelled queries expect come first (every other one), so every catalogue of 80 tools
or more holds all of them.

``tool_file_source(n)`` is a protomcp tool file (``@tool`` functions with ``Annotated`` /
``Field`` parameters); ``QUERIES`` is the labelled query set: what a user might ask, in their
words, and the tool that does it. Used by ``tokens.py`` and ``tests/e2e/test_discovery_e2e.py``.
"""

# ruff: noqa: E501  (the service table reads best one object per line)

from __future__ import annotations

import random
from dataclasses import dataclass

SEED = 18

# service prefix, product name, what it is, its scope parameter, three kinds of object:
# (noun, create verb, fields "name:type:description[=default]"; type str|int|bool|date|enum(a|b))
SERVICES: list[tuple[str, str, str, str, list[tuple[str, str, list[str]]]]] = [
    (
        "github",
        "GitHub",
        "code hosting",
        "repo:str:Repository as owner/name",
        [
            (
                "pull_request",
                "open",
                ["title:str:Title of the pull request", "base:str:Branch to merge into=main"],
            ),
            ("issue", "open", ["title:str:Short summary of the issue", "labels:list:Labels to apply"]),
            ("release", "publish", ["tag:str:Git tag of the release", "draft:bool:Keep it as a draft=False"]),
        ],
    ),
    (
        "gitlab",
        "GitLab",
        "DevOps platform",
        "project:str:Project path, e.g. group/app",
        [
            (
                "merge_request",
                "open",
                ["title:str:Title of the merge request", "squash:bool:Squash commits=True"],
            ),
            ("pipeline", "trigger", ["ref:str:Branch or tag to run on", "variables:list:KEY=VALUE pairs"]),
            (
                "runner",
                "register",
                ["description:str:Runner description", "tag_list:list:Job tags it accepts"],
            ),
        ],
    ),
    (
        "slack",
        "Slack",
        "team chat",
        "workspace:str:Workspace domain",
        [
            ("message", "send", ["channel:str:Channel name or ID", "text:str:Message text (mrkdwn)"]),
            ("channel", "create", ["name:str:Channel name", "private:bool:Make it private=False"]),
            ("reminder", "set", ["text:str:What to remind about", "time:str:When, e.g. 'in 20 minutes'"]),
        ],
    ),
    (
        "teams",
        "Microsoft Teams",
        "workplace chat and meetings",
        "tenant:str:Tenant ID",
        [
            ("meeting", "schedule", ["subject:str:Meeting subject", "duration_minutes:int:Length=30"]),
            ("chat", "start", ["members:list:User emails", "topic:str:Chat topic"]),
            (
                "team",
                "create",
                ["display_name:str:Team name", "visibility:enum(public|private):Who can join=private"],
            ),
        ],
    ),
    (
        "jira",
        "Jira",
        "issue tracking",
        "project_key:str:Project key, e.g. ENG",
        [
            (
                "ticket",
                "file",
                [
                    "summary:str:One-line summary",
                    "priority:enum(lowest|low|medium|high|highest):Priority=medium",
                ],
            ),
            ("sprint", "start", ["name:str:Sprint name", "goal:str:Sprint goal"]),
            ("epic", "create", ["name:str:Epic name", "color:str:Card color"]),
        ],
    ),
    (
        "linear",
        "Linear",
        "product planning",
        "team:str:Team key",
        [
            ("cycle", "create", ["starts_at:date:First day", "ends_at:date:Last day"]),
            ("roadmap", "create", ["name:str:Roadmap name", "quarter:enum(Q1|Q2|Q3|Q4):Quarter"]),
            ("label", "create", ["name:str:Label name", "color:str:Hex color=#888888"]),
        ],
    ),
    (
        "gcal",
        "Google Calendar",
        "calendars",
        "calendar_id:str:Calendar ID=primary",
        [
            (
                "event",
                "schedule",
                ["title:str:Event title", "start:date:Start time", "attendees:list:Guest emails"],
            ),
            ("calendar", "create", ["summary:str:Calendar name", "time_zone:str:IANA time zone=UTC"]),
            ("out_of_office", "set", ["start:date:First day away", "end:date:Last day away"]),
        ],
    ),
    (
        "gmail",
        "Gmail",
        "email",
        "mailbox:str:Mailbox address=me",
        [
            ("email", "send", ["to:list:Recipients", "subject:str:Subject line", "body:str:Plain-text body"]),
            ("draft", "create", ["to:list:Recipients", "subject:str:Subject line"]),
            ("filter", "create", ["from_address:str:Sender to match", "label:str:Label to apply"]),
        ],
    ),
    (
        "drive",
        "Google Drive",
        "file storage",
        "drive_id:str:Shared drive ID=my-drive",
        [
            ("file", "upload", ["name:str:File name", "mime_type:str:MIME type=application/octet-stream"]),
            ("folder", "create", ["name:str:Folder name", "parent_id:str:Parent folder ID"]),
            (
                "permission",
                "grant",
                ["email:str:Who gets access", "role:enum(reader|commenter|writer):Access level=reader"],
            ),
        ],
    ),
    (
        "postgres",
        "PostgreSQL",
        "relational database",
        "database:str:Database name",
        [
            ("table", "create", ["name:str:Table name", "columns:list:Column definitions"]),
            ("row", "insert", ["table:str:Table name", "values:list:Column=value pairs"]),
            (
                "index",
                "create",
                ["table:str:Table name", "columns:list:Indexed columns", "unique:bool:Unique index=False"],
            ),
        ],
    ),
    (
        "bigquery",
        "BigQuery",
        "data warehouse",
        "project_id:str:Cloud project ID",
        [
            (
                "dataset",
                "create",
                ["dataset_id:str:Dataset ID", "location:enum(US|EU|asia-northeast1):Location=US"],
            ),
            ("query_job", "run", ["sql:str:Standard SQL text", "dry_run:bool:Only estimate bytes=False"]),
            ("scheduled_query", "create", ["sql:str:Standard SQL text", "schedule:str:Cron-like schedule"]),
        ],
    ),
    (
        "s3",
        "Amazon S3",
        "object storage",
        "region:str:AWS region=us-east-1",
        [
            ("bucket", "create", ["bucket:str:Bucket name", "versioning:bool:Enable versioning=False"]),
            ("object", "upload", ["bucket:str:Bucket name", "key:str:Object key"]),
            (
                "lifecycle_rule",
                "add",
                ["bucket:str:Bucket name", "expire_days:int:Days until objects expire=30"],
            ),
        ],
    ),
    (
        "k8s",
        "Kubernetes",
        "container orchestration",
        "namespace:str:Namespace=default",
        [
            ("pod", "create", ["name:str:Pod name", "image:str:Container image"]),
            ("deployment", "create", ["name:str:Deployment name", "replicas:int:Number of replicas=1"]),
            ("service", "expose", ["name:str:Service name", "port:int:Port to expose"]),
        ],
    ),
    (
        "ec2",
        "Amazon EC2",
        "virtual machines",
        "region:str:AWS region=us-east-1",
        [
            ("instance", "launch", ["instance_type:str:Instance type=t3.micro", "ami:str:Machine image ID"]),
            (
                "volume",
                "create",
                ["size_gb:int:Size in GiB", "volume_type:enum(gp3|io2|st1):Volume type=gp3"],
            ),
            ("security_group", "create", ["name:str:Group name", "description:str:What it allows"]),
        ],
    ),
    (
        "stripe",
        "Stripe",
        "payments",
        "account:str:Connected account ID",
        [
            (
                "invoice",
                "create",
                [
                    "customer:str:Customer ID",
                    "amount_cents:int:Amount in cents",
                    "currency:str:ISO currency=usd",
                ],
            ),
            ("customer", "create", ["email:str:Customer email", "name:str:Full name"]),
            ("refund", "issue", ["charge:str:Charge ID", "amount_cents:int:Amount in cents (all if unset)"]),
        ],
    ),
    (
        "quickbooks",
        "QuickBooks",
        "accounting",
        "company_id:str:Company ID",
        [
            ("bill", "enter", ["vendor_id:str:Vendor ID", "due_date:date:Due date"]),
            ("vendor", "add", ["display_name:str:Vendor name", "email:str:Billing email"]),
            ("expense", "record", ["amount:float:Amount", "category:str:Expense category"]),
        ],
    ),
    (
        "salesforce",
        "Salesforce",
        "CRM",
        "org:str:Org alias",
        [
            ("lead", "create", ["company:str:Company name", "last_name:str:Contact last name"]),
            (
                "opportunity",
                "create",
                [
                    "name:str:Opportunity name",
                    "stage:enum(prospecting|qualification|proposal|closed_won|closed_lost):Sales stage=prospecting",
                ],
            ),
            ("account", "create", ["name:str:Account name", "industry:str:Industry"]),
        ],
    ),
    (
        "hubspot",
        "HubSpot",
        "marketing automation",
        "portal_id:str:Portal ID",
        [
            (
                "contact",
                "create",
                ["email:str:Contact email", "lifecycle_stage:enum(subscriber|lead|customer):Stage=lead"],
            ),
            ("deal", "create", ["deal_name:str:Deal name", "amount:float:Deal value"]),
            ("campaign", "launch", ["name:str:Campaign name", "budget:float:Budget in USD"]),
        ],
    ),
    (
        "notion",
        "Notion",
        "notes and wikis",
        "workspace:str:Workspace ID",
        [
            ("page", "create", ["title:str:Page title", "parent_id:str:Parent page or database"]),
            ("database", "create", ["title:str:Database title", "properties:list:Property definitions"]),
            ("block", "append", ["page_id:str:Page ID", "markdown:str:Content as Markdown"]),
        ],
    ),
    (
        "zendesk",
        "Zendesk",
        "customer support desk",
        "subdomain:str:Zendesk subdomain",
        [
            ("support_ticket", "open", ["subject:str:Ticket subject", "requester_email:str:Customer email"]),
            ("macro", "create", ["title:str:Macro title", "actions:list:Field changes it applies"]),
            (
                "satisfaction_survey",
                "send",
                ["ticket_id:int:Solved ticket", "channel:enum(email|web):How to ask=email"],
            ),
        ],
    ),
    (
        "pagerduty",
        "PagerDuty",
        "on-call and incident response",
        "service_id:str:Service ID",
        [
            ("incident", "trigger", ["title:str:What is broken", "urgency:enum(high|low):Urgency=high"]),
            ("oncall_schedule", "create", ["name:str:Schedule name", "time_zone:str:IANA time zone=UTC"]),
            ("maintenance_window", "create", ["start:date:Start time", "end:date:End time"]),
        ],
    ),
    (
        "datadog",
        "Datadog",
        "monitoring",
        "site:str:Datadog site=datadoghq.com",
        [
            ("monitor", "create", ["query:str:Metric query to alert on", "threshold:float:Alert threshold"]),
            (
                "dashboard",
                "create",
                ["title:str:Dashboard title", "layout:enum(ordered|free):Layout=ordered"],
            ),
            ("log_pipeline", "create", ["name:str:Pipeline name", "filter_query:str:Logs it processes"]),
        ],
    ),
    (
        "twilio",
        "Twilio",
        "SMS and voice",
        "account_sid:str:Account SID",
        [
            ("sms", "send", ["to:str:Phone number in E.164", "body:str:Message text"]),
            ("phone_number", "buy", ["area_code:int:Area code", "sms_enabled:bool:Needs SMS=True"]),
            ("voice_call", "place", ["to:str:Phone number in E.164", "twiml_url:str:Instructions URL"]),
        ],
    ),
    (
        "shopify",
        "Shopify",
        "online store",
        "shop:str:Shop domain",
        [
            (
                "product",
                "create",
                ["title:str:Product title", "price:float:Price", "sku:str:Stock keeping unit"],
            ),
            ("order", "create", ["line_items:list:Variant IDs and quantities", "email:str:Customer email"]),
            ("discount_code", "create", ["code:str:The code", "percent_off:int:Percent off=10"]),
        ],
    ),
    (
        "workday",
        "Workday",
        "HR",
        "tenant:str:Tenant name",
        [
            (
                "employee",
                "hire",
                ["name:str:Full name", "position_id:str:Position to fill", "start_date:date:First day"],
            ),
            (
                "time_off_request",
                "submit",
                [
                    "employee_id:str:Employee ID",
                    "days:float:Days off",
                    "kind:enum(vacation|sick|parental):Kind=vacation",
                ],
            ),
            ("position", "open", ["title:str:Job title", "department:str:Department"]),
        ],
    ),
    (
        "greenhouse",
        "Greenhouse",
        "recruiting",
        "board:str:Job board token",
        [
            (
                "candidate",
                "add",
                ["first_name:str:First name", "last_name:str:Last name", "job_id:int:Job applied to"],
            ),
            ("job_posting", "publish", ["title:str:Job title", "location:str:Office or Remote"]),
            ("interview", "schedule", ["application_id:int:Application ID", "start:date:Start time"]),
        ],
    ),
    (
        "figma",
        "Figma",
        "design",
        "team_id:str:Team ID",
        [
            ("design_file", "create", ["name:str:File name", "project_id:str:Project ID"]),
            ("comment_thread", "start", ["file_key:str:File key", "message:str:Comment text"]),
            ("component", "publish", ["file_key:str:File key", "description:str:Release notes"]),
        ],
    ),
    (
        "weather",
        "OpenWeather",
        "weather data",
        "units:enum(metric|imperial):Units=metric",
        [
            ("forecast", "request", ["city:str:City name", "days:int:Days ahead=3"]),
            ("severe_alert", "subscribe", ["lat:float:Latitude", "lon:float:Longitude"]),
            ("station", "register", ["name:str:Station name", "altitude_m:int:Altitude in meters"]),
        ],
    ),
]


# action: (verb or None = the object's own verb for "create"), sentences (one is picked), params
ACTIONS: dict[str, tuple[list[str], list[str]]] = {
    "list": (
        [
            "Lists the {plural} in {product}, newest first, one page at a time.",
            "Returns a page of {plural} from {product} that match the optional filter.",
        ],
        [
            "limit:int:Maximum results per page=25",
            "cursor:str:Page cursor from the previous call",
            "order:enum(newest|oldest|name):Sort order=newest",
        ],
    ),
    "get": (
        [
            "Fetches one {singular} from {product} by its ID, with all its fields.",
            "Retrieves the full details of a single {singular} in {product}.",
        ],
        ["{id}:str:ID of the {singular}", "include:enum(summary|full|raw):How much to return=summary"],
    ),
    "create": (
        [
            "{Verb}s a new {singular} in {product}.",
            "Use this to {verb} a {singular} in {product}; the new {singular} is returned with its ID.",
        ],
        [],
    ),
    "update": (
        [
            "Updates fields of an existing {singular} in {product}; fields left out keep their value.",
            "Changes an existing {singular} in {product} (a partial update).",
        ],
        ["{id}:str:ID of the {singular}"],
    ),
    "delete": (
        [
            "Permanently deletes a {singular} from {product}. This cannot be undone.",
            "Removes a {singular} from {product} for good.",
        ],
        ["{id}:str:ID of the {singular}", "force:bool:Delete even if other items depend on it=False"],
    ),
    "search": (
        [
            "Full-text search over {plural} in {product}; ranks by relevance.",
            "Finds {plural} in {product} whose text matches the query.",
        ],
        ["query:str:Words to search for", "limit:int:Maximum results=10"],
    ),
    "archive": (
        [
            "Archives a {singular} in {product}: it is hidden from lists but can be restored.",
            "Moves a {singular} in {product} to the archive.",
        ],
        ["{id}:str:ID of the {singular}", "reason:str:Why it is archived"],
    ),
    "restore": (
        [
            "Restores an archived or deleted {singular} in {product}.",
            "Brings back a {singular} in {product} from the archive or trash.",
        ],
        ["{id}:str:ID of the {singular}", "version:int:Version to restore (the latest if unset)=None"],
    ),
    "export": (
        [
            "Exports {plural} from {product} as a downloadable file.",
            "Writes {plural} from {product} to a CSV, JSON or XLSX file and returns its URL.",
        ],
        ["format:enum(csv|json|xlsx):File format=csv", "since:date:Only items changed since then"],
    ),
    "share": (
        [
            "Shares a {singular} in {product} with a person by email.",
            "Gives someone access to a {singular} in {product}.",
        ],
        [
            "{id}:str:ID of the {singular}",
            "email:str:Who to share with",
            "role:enum(viewer|editor|owner):Access level=viewer",
        ],
    ),
    "count": (
        [
            "Counts the {plural} in {product} that match a filter, without fetching them.",
            "Returns how many {plural} {product} has, optionally since a date.",
        ],
        ["since:date:Only count items created since then"],
    ),
    "comment": (
        [
            "Adds a comment to a {singular} in {product}.",
            "Posts a note on a {singular} in {product}; watchers are notified.",
        ],
        [
            "{id}:str:ID of the {singular}",
            "body:str:Comment text (Markdown)",
            "notify:bool:Notify watchers=True",
        ],
    ),
}
EXTRA = [
    "Requires a {product} connection with the right permissions.",
    "Uses the {product} API of the connected account; rate limits apply.",
    "Errors from {product} are returned as readable messages.",
    "Works with {product} ({what}).",
    "Returns a compact summary by default to keep the response short.",
]

# (what a user might ask, in their words; the tool that does it)
QUERIES: list[tuple[str, str]] = [
    ("send a message to the #general channel on slack", "slack_send_message"),
    ("open a pull request on github", "github_open_pull_request"),
    ("refund a customer's payment", "stripe_issue_refund"),
    ("schedule a meeting on my google calendar", "gcal_schedule_event"),
    ("send an email to the team", "gmail_send_email"),
    ("text a phone number", "twilio_send_sms"),
    ("page the on-call engineer, the site is down", "pagerduty_trigger_incident"),
    ("create a new jira ticket for a bug", "jira_file_ticket"),
    ("upload a file to google drive", "drive_upload_file"),
    ("give a colleague edit access to a drive file", "drive_grant_permission"),
    ("run a SQL query in bigquery", "bigquery_run_query_job"),
    ("create an s3 bucket", "s3_create_bucket"),
    ("scale a kubernetes deployment to 5 replicas", "k8s_update_deployment"),
    ("launch a new ec2 virtual machine", "ec2_launch_instance"),
    ("add a new lead in salesforce", "salesforce_create_lead"),
    ("create a datadog alert on high cpu", "datadog_create_monitor"),
    ("hire a new employee in workday", "workday_hire_employee"),
    ("request vacation days off", "workday_submit_time_off_request"),
    ("schedule an interview with a candidate", "greenhouse_schedule_interview"),
    ("weather forecast for Paris this week", "weather_get_forecast"),
    ("list the open issues of a github repo", "github_list_issue"),
    ("search slack messages about the outage", "slack_search_message"),
    ("delete a kubernetes pod", "k8s_delete_pod"),
    ("export all shopify orders to csv", "shopify_export_order"),
    ("how many customers do we have in stripe", "stripe_count_customer"),
    ("comment on a figma design file", "figma_comment_design_file"),
    ("archive an old notion page", "notion_archive_page"),
    ("restore a deleted email draft", "gmail_restore_draft"),
    ("create a discount code for the store", "shopify_create_discount_code"),
    ("start a new sprint in jira", "jira_start_sprint"),
    ("trigger a gitlab ci pipeline", "gitlab_trigger_pipeline"),
    ("insert a row into a postgres table", "postgres_insert_row"),
    ("add an index on a postgres column", "postgres_create_index"),
    ("set a slack reminder for tomorrow", "slack_set_reminder"),
    ("record a business expense in quickbooks", "quickbooks_record_expense"),
    ("update a hubspot deal amount", "hubspot_update_deal"),
    ("publish a job posting for a backend engineer", "greenhouse_publish_job_posting"),
    ("open a zendesk support ticket for a customer", "zendesk_open_support_ticket"),
    ("buy a twilio phone number", "twilio_buy_phone_number"),
    ("share a notion database with a teammate", "notion_share_database"),
]


@dataclass(slots=True)
class Param:
    name: str
    kind: str  # str int float bool date list enum(a|b)
    description: str
    default: str | None


@dataclass(slots=True)
class ToolShape:
    name: str
    description: str
    params: list[Param]


def _param(text: str, **names: str) -> Param:
    name, kind, rest = text.format(**names).split(":", 2)
    description, _, default = rest.partition("=")
    return Param(name, kind, description, default if _ else None)


def all_tools() -> list[ToolShape]:
    """Every tool of the universe, in the order catalogues take them (labelled targets first)."""
    rng = random.Random(SEED)
    tools: list[ToolShape] = []
    for prefix, product, what, scope, objects in SERVICES:
        for singular, verb, fields in objects:
            words = singular.replace("_", " ")
            plural = words + ("es" if words.endswith(("s", "x", "ch", "sh")) else "s")
            for action, (sentences, params) in ACTIONS.items():
                names = {
                    "singular": words,
                    "plural": plural,
                    "product": product,
                    "what": what,
                    "verb": verb,
                    "Verb": verb.capitalize(),
                    "id": f"{singular}_id",
                }
                name = f"{prefix}_{verb if action == 'create' else action}_{singular}"
                text = rng.choice(sentences).format(**names)
                extras = rng.sample(EXTRA, rng.randint(1, 3))
                description = " ".join([text, *(e.format(**names) for e in extras)])
                specs = [scope, *params]
                if action in ("create", "update"):
                    specs += fields
                elif action in ("list", "search", "count"):
                    specs.append(fields[0])  # a filter on the first field
                shaped: list[Param] = []
                for spec in specs:  # a field may repeat the scope (calendar_id): keep the first
                    param = _param(spec, **names)
                    if param.name not in {p.name for p in shaped}:
                        shaped.append(param)
                shaped = shaped[:6]
                if action in ("update", "list", "search", "count"):
                    for p in shaped[1:]:  # filters and partial updates: optional
                        if p.default is None and p.name != f"{singular}_id" and p.name != "query":
                            p.default = "None"
                tools.append(ToolShape(name, description, shaped))
    targets = {target for _, target in QUERIES}
    missing = targets - {t.name for t in tools}
    assert not missing, f"labelled queries name unknown tools: {sorted(missing)}"
    rest = [t for t in tools if t.name not in targets]
    rng.shuffle(rest)
    first = [t for t in tools if t.name in targets]
    rng.shuffle(first)
    # Mix: a target, then a few others, so small catalogues are not only targets.
    ordered: list[ToolShape] = []
    while first or rest:
        if first:
            ordered.append(first.pop())
        ordered.extend(rest[:1])
        del rest[:1]
    return ordered


def tools(count: int) -> list[ToolShape]:
    universe = all_tools()
    if count > len(universe):
        raise ValueError(f"at most {len(universe)} realistic tools")
    return universe[:count]


_TYPES = {
    "str": "str",
    "int": "int",
    "float": "float",
    "bool": "bool",
    "date": "datetime",
    "list": "list[str]",
}


def _annotation(param: Param) -> str:
    if param.kind.startswith("enum("):
        options = param.kind[5:-1].split("|")
        base = "Literal[" + ", ".join(repr(o) for o in options) + "]"
    else:
        base = _TYPES[param.kind]
    if param.default == "None":
        base += " | None"
    return f"Annotated[{base}, Field(description={param.description!r})]"


def _default(param: Param) -> str:
    if param.default is None:
        return ""
    if param.default == "None":
        return " = None"
    if param.kind in ("int", "float") or param.default in ("True", "False"):
        return f" = {param.default}"
    return f" = {param.default!r}"


def function_source(tool: ToolShape, decorator: str = "@tool") -> str:
    required = [p for p in tool.params if p.default is None]
    optional = [p for p in tool.params if p.default is not None]
    args = ", ".join(f"{p.name}: {_annotation(p)}{_default(p)}" for p in [*required, *optional])
    return (
        f"\n\n{decorator}\ndef {tool.name}({args}) -> str:\n"
        f"    {tool.description!r}\n"
        f"    return {tool.name + ' ok'!r}\n"
    )


def tool_file_source(count: int, extra: str = "") -> str:
    header = (
        f'"""{count} generated tools of realistic shape (benchmarks/realistic_tools.py)."""\n\n'
        "from datetime import datetime\nfrom typing import Annotated, Literal\n\n"
        "from pydantic import Field\n\nfrom protomcp_sdk import tool\n"
    )
    return header + "".join(function_source(t) for t in tools(count)) + extra
