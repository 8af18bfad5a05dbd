"""A typed tool: its parameter and result are generated protobuf message classes."""

from search_pb2 import SearchResult, WebSearchRequest, WebSearchResponse

from protomcp_sdk import tool


@tool
def web_search(request: WebSearchRequest) -> WebSearchResponse:
    """Search the web (a fake index: one result per site, or one for the query)."""
    assert isinstance(request, WebSearchRequest)  # the function gets the message itself
    sites = list(request.sites) or ["example.com"]
    results = [SearchResult(title=f"{request.query} on {site}", url=f"https://{site}/") for site in sites]
    shown = results[: request.max_results or len(results)]
    return WebSearchResponse(results=shown, total_count=len(results))


@tool
def describe_search(request: WebSearchRequest) -> str:
    """What the search would do, as text (the safety level, range and boosts it received)."""
    dates = request.date_range
    span = f"{dates.start}..{dates.end}" if request.HasField("date_range") else "any time"
    safety = WebSearchRequest.Safety.Name(request.safety)
    return f"{request.query!r} {safety} {span} {dict(sorted(request.boosts.items()))}"


@tool
def wire_size(request: WebSearchRequest) -> int:
    """The size of the message as the function got it (fields it does not know included)."""
    return request.ByteSize()
