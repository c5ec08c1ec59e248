# StructuredData: plain values (numbers, lists, dicts, tables) passed to or returned by a UDF.


class StructuredData:
    def __init__(self, data, description: str = None, type: str = None):
        self.data = data
        self.description = description or "structured data"
        self.type = type or _kind(data)

    def to_dict(self) -> dict:
        return {"data": self.data, "description": self.description, "type": self.type}

    @classmethod
    def from_dict(cls, d: dict) -> "StructuredData":
        return cls(data=d["data"], description=d.get("description"), type=d.get("type"))

    def __repr__(self) -> str:
        return f"<StructuredData type:{self.type}>"


def _kind(data) -> str:
    if isinstance(data, dict):
        return "dict"
    if isinstance(data, (list, tuple)):
        return "list"
    return type(data).__name__
