CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT);
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author TEXT NOT NULL);
CREATE TABLE loans (
    id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL REFERENCES books(id),
    member_id INTEGER NOT NULL REFERENCES members(id),
    loaned_on TEXT NOT NULL,
    due_on TEXT NOT NULL,
    returned_on TEXT
);
INSERT INTO members VALUES
 (1, 'Iris Novak', 'iris@example.com'),
 (2, 'Tomasz Wolski', 'tw@example.com'),
 (3, 'Adaeze Obi', 'adaeze@example.com'),
 (4, 'Pedro Alves', NULL),
 (5, 'Yuki Tanaka', 'yuki@example.com');
INSERT INTO books VALUES
 (1, 'The Quiet Orchard', 'M. Fell'),
 (2, 'Rivers of Salt', 'J. Okoro'),
 (3, 'A Field Guide to Moss', 'L. Brandt'),
 (4, 'Night Trains', 'S. Varga'),
 (5, 'Copper and Glass', 'R. Imai'),
 (6, 'Winter Recipes', 'E. Moreau');
INSERT INTO loans VALUES
 (1, 1, 1, '2024-05-01', '2024-05-22', '2024-05-20'),
 (2, 2, 1, '2024-06-03', '2024-06-24', NULL),
 (3, 3, 2, '2024-05-15', '2024-06-05', NULL),
 (4, 4, 3, '2024-06-10', '2024-07-01', NULL),
 (5, 5, 4, '2024-05-20', '2024-06-10', '2024-06-28'),
 (6, 6, 4, '2024-06-01', '2024-06-22', NULL),
 (7, 1, 5, '2024-06-09', '2024-06-30', NULL),
 (8, 4, 2, '2024-04-02', '2024-04-23', NULL),
 (9, 5, 5, '2024-06-03', '2024-06-24', NULL);
