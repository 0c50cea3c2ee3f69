CREATE TABLE subscribers (
    id INTEGER PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT,
    created_at TEXT NOT NULL
);
INSERT INTO subscribers (id, email, name, created_at) VALUES
 (1, 'amelie.roux@example.fr', 'Amelie Roux', '2023-09-01'),
 (2, 'Ben.Carter@Example.com', 'Ben Carter', '2023-09-02'),
 (3, 'chen.wei@example.cn', 'Chen Wei', '2023-09-02'),
 (4, 'ben.carter@example.com', 'Benjamin Carter', '2023-10-11'),
 (5, 'dmitri@example.ru', NULL, '2023-10-12'),
 (6, 'AMELIE.ROUX@EXAMPLE.FR', 'A. Roux', '2023-11-30'),
 (7, 'elif.yilmaz@example.com.tr', 'Elif Yilmaz', '2023-12-01'),
 (8, 'Farah.Aziz@example.pk', 'Farah Aziz', '2024-01-05'),
 (9, 'amelie.roux@example.fr', 'Amelie R.', '2024-01-06'),
 (10, 'gus@example.com', 'Gus', '2024-01-07'),
 (11, 'DMITRI@example.ru', 'Dmitri', '2024-02-14'),
 (12, 'hana.sato@example.jp', 'Hana Sato', '2024-02-20');
CREATE TABLE campaigns (id INTEGER PRIMARY KEY, subject TEXT NOT NULL, sent_at TEXT);
INSERT INTO campaigns VALUES (1, 'Spring catalogue', '2024-03-01'), (2, 'Summer sale', NULL);
