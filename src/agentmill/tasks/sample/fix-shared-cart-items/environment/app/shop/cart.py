"""Shopping cart used by the checkout service."""


class Cart:
    def __init__(self, owner, items=[], discounts={}):
        self.owner = owner
        self.items = items
        self.discounts = discounts

    def add(self, sku, price_cents, qty=1):
        if qty <= 0:
            raise ValueError("qty must be positive")
        self.items.append((sku, price_cents, qty))

    def apply_discount(self, code, percent):
        self.discounts[code] = percent

    def subtotal_cents(self):
        return sum(price * qty for _, price, qty in self.items)

    def total_cents(self):
        total = self.subtotal_cents()
        for percent in self.discounts.values():
            total = total * (100 - percent) // 100
        return total
