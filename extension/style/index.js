import './base.css';
import './job-page.css';
