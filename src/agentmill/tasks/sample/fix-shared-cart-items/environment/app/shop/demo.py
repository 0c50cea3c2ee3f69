from cart import Cart

alice = Cart("alice")
alice.add("MUG-01", 1250, 2)
alice.apply_discount("WELCOME10", 10)

bob = Cart("bob")
bob.add("PEN-07", 199)

print("alice:", alice.items, alice.total_cents())
print("bob:  ", bob.items, bob.total_cents())
