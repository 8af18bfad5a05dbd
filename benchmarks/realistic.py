"""A realistic tool file for the reload benchmark: pydantic models, several tools, a resource, a prompt."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from protomcp_sdk import Context, Message, prompt, resource, tool


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"


class Address(BaseModel):
    street: str
    city: str
    country: str = "FR"


class Customer(BaseModel):
    id: int
    name: str
    email: str | None = None
    addresses: list[Address] = []
    tags: set[str] = set()


class Order(BaseModel):
    id: int
    customer: Customer
    lines: list[dict[str, float]]
    priority: Priority = Priority.normal
    created: datetime


class SearchResult(BaseModel):
    total: int
    items: list[Customer]


@tool
def search_customers(
    query: Annotated[str, Field(description="Words to look for in names and emails")],
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    sort: Literal["name", "id"] = "name",
) -> SearchResult:
    """Search the catalog."""
    return SearchResult(total=0, items=[])


@tool
def create_order(order: Order, dry_run: bool = False) -> Order:
    """Create an order for a customer."""
    return order


@tool(read_only=True)
async def order_status(order_id: int, ctx: Context) -> str:
    """Tell where an order is."""
    await ctx.info(f"looking up {order_id}")
    return "shipped"


@tool
def update_address(customer_id: int, address: Address, priority: Priority = Priority.low) -> Customer:
    """Replace a customer's address."""
    return Customer(id=customer_id, name="?", addresses=[address])


@resource("customers://{id}", mime_type="application/json")
def customer(id: str) -> str:
    """One customer as JSON."""
    return Customer(id=int(id), name="?").model_dump_json()


@prompt(description="Write a reply to a customer")
def reply(customer_id: str, tone: str = "friendly") -> list[Message]:
    return [Message("user", f"Write a {tone} reply to customer {customer_id}.")]
